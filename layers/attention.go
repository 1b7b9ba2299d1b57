package layers

import (
	"fmt"
	"math"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// AttentionScratchLen is the scratch (f32 elements) one worker of Attention or
// AttentionRange needs over an f32 cache for contexts up to maxContext positions: one row
// of scores per query head of a kv-head group, (heads/kvHeads)·maxContext.
// PagedKVCache.AttentionScratchLen gives it for any cache.
func AttentionScratchLen(heads, kvHeads, maxContext int) int {
	if kvHeads <= 0 {
		return 0
	}
	return heads / kvHeads * maxContext
}

// AttentionScratchLen is the scratch one worker of attention over this cache needs for
// contexts up to maxContext positions: the scores, and for a 16-bit cache four rows of
// HeadDim that K and V rows are widened into.
func (c *PagedKVCache) AttentionScratchLen(heads, maxContext int) int {
	n := AttentionScratchLen(heads, c.cfg.KVHeads, maxContext)
	if c.k16 != nil {
		n += widenRows * c.cfg.HeadDim
	}
	return n
}

// widenRows is how many K or V rows of a 16-bit cache attention widens at once: the four
// positions dot4 and axpy4 take.
const widenRows = 4

// kvRows reads one layer's K or V rows for attention: f32 storage in place, 16-bit storage
// widened into buf (widenRows rows of headDim), whose row i a caller may hold until it asks
// for row i again.
type kvRows struct {
	f32 []float32
	u16 []uint16
	t   dtype.DType
	buf []float32
	d   int
}

func (c *PagedKVCache) rows(k bool, layer int, buf []float32) kvRows {
	r := kvRows{t: c.cfg.DType, buf: buf, d: c.cfg.HeadDim}
	switch {
	case c.k != nil && k:
		r.f32 = c.k[layer]
	case c.k != nil:
		r.f32 = c.v[layer]
	case k:
		r.u16 = c.k16[layer]
	default:
		r.u16 = c.v16[layer]
	}
	return r
}

// row returns the row at off, as buffer row i when it has to be widened.
func (r kvRows) row(i, off int) []float32 {
	if r.f32 != nil {
		return r.f32[off : off+r.d]
	}
	b := r.buf[i*r.d : (i+1)*r.d]
	vec.Widen(r.t, b, r.u16[off:off+r.d])
	return b
}

// Attention is causal grouped-query attention over a paged KV cache for every token of b:
// AttentionRange over every (token, kv head) unit. q and out are [tokens, heads, headDim];
// the token's own K and V must already be in the cache (PagedKVCache.Write), so decode,
// prefill and mixed batches are one call.
func Attention(out, q []float32, heads int, kv *PagedKVCache, layer int, b Batch, scratch []float32) error {
	if kv == nil {
		return fmt.Errorf("layers: attention: nil kv cache")
	}
	return AttentionRange(out, q, heads, kv, layer, b, scratch, 0, b.Tokens()*kv.cfg.KVHeads)
}

// AttentionRange computes the units [u0, u1) of causal grouped-query attention over layer's
// paged K and V, unit u = t·kvHeads + g being token t with the heads/kvHeads query heads
// h = g·G … g·G+G−1 that share kv head g (G = heads/kvHeads), so that callers can give each
// SM a range of units; each worker passes its own scratch of at least
// kv.AttentionScratchLen(heads, max Pos+1) elements. The result of a unit depends
// only on its query, its sequence's K and V and its position: not on the batch, the range
// or the worker. The reference loop, with dot and sum in the package's fixed order (8
// partial sums over index mod 8, combined in a fixed tree), expf the package's f32 e^x and
// K[p], V[p] the cache rows of position p of the token's sequence for kv head g:
//
//	P := Pos[t] + 1
//	for each h of the group {
//		for p := range P { s[p] = dot(q[t][h], K[p]) * float32(1/math.Sqrt(float64(headDim))) }
//		m := max(s[:P])
//		for p := range P { s[p] = expf(s[p] - m) }
//		l := sum(s[:P])
//		for d := range headDim {
//			acc := float32(0)
//			for p := range P { acc += float32(s[p] * V[p][d]) }
//			out[t][h][d] = acc / l
//		}
//	}
//
// out must not overlap q, scratch or the cache. It does not allocate.
func AttentionRange(out, q []float32, heads int, kv *PagedKVCache, layer int, b Batch, scratch []float32, u0, u1 int) error {
	if kv == nil {
		return fmt.Errorf("layers: attention: nil kv cache")
	}
	c := kv.cfg
	if heads <= 0 || heads%c.KVHeads != 0 {
		return fmt.Errorf("layers: attention: %d query heads is not a positive multiple of %d kv heads", heads, c.KVHeads)
	}
	n, d := b.Tokens(), c.HeadDim
	if len(q) != n*heads*d || len(out) != len(q) {
		return fmt.Errorf("layers: attention: len(q)=%d, len(out)=%d, want tokens·heads·headDim = %d·%d·%d = %d", len(q), len(out), n, heads, d, n*heads*d)
	}
	if u0 < 0 || u0 > u1 || u1 > n*c.KVHeads {
		return fmt.Errorf("layers: attention: units [%d, %d) not within [0, %d) (%d tokens · %d kv heads)", u0, u1, n*c.KVHeads, n, c.KVHeads)
	}
	if u0 == u1 {
		return nil
	}
	t0, t1 := u0/c.KVHeads, (u1-1)/c.KVHeads+1
	if err := kv.check("attention", layer, b, t0, t1, true); err != nil {
		return err
	}
	g := heads / c.KVHeads
	widen := kv.AttentionScratchLen(heads, 0) // the rows 16-bit K and V are widened into
	for t := t0; t < t1; t++ {
		if need := g*(int(b.Pos[t])+1) + widen; len(scratch) < need {
			rows := ""
			if widen > 0 {
				rows = fmt.Sprintf(" + %d for widened rows", widen)
			}
			return fmt.Errorf("layers: attention: token %d at position %d needs scratch of %d·%d%s = %d, have %d", t, b.Pos[t], g, b.Pos[t]+1, rows, need, len(scratch))
		}
	}
	buf := scratch[len(scratch)-widen:]
	k, v := kv.rows(true, layer, buf), kv.rows(false, layer, buf)
	scale := float32(1 / math.Sqrt(float64(d)))
	for u := u0; u < u1; u++ {
		t, kh := u/c.KVHeads, u%c.KVHeads
		qo := (t*heads + kh*g) * d
		attendGroup(out[qo:qo+g*d], q[qo:qo+g*d], k, v, b.table(t), int(b.Pos[t])+1, kh, c, scale, scratch)
	}
	return nil
}

// attendGroup is one unit of AttentionRange: the query heads q ([G, headDim]) of one kv-head
// group attend positions [0, P) of kv head kh through block table tbl; out is [G, headDim].
func attendGroup(out, q []float32, k, v kvRows, tbl []int32, P, kh int, c KVCacheConfig, scale float32, scratch []float32) {
	d, bs, tl := c.HeadDim, c.BlockSize, c.TokenLen()
	g := len(q) / d
	s := scratch[:g*P]
	// Scores, position-major so that each K row is read once for the whole group; four
	// positions of a block at a time (dot4: four independent sums where one dot product
	// waits on its own chain of adds), each score still dot(q, K[p]) · scale.
	for p0 := 0; p0 < P; p0 += bs {
		base := int(tbl[p0/bs]) * bs
		nb := min(bs, P-p0)
		j := 0
		for ; j+4 <= nb; j += 4 {
			off := (base+j)*tl + kh*d
			k0, k1, k2, k3 := k.row(0, off), k.row(1, off+tl), k.row(2, off+2*tl), k.row(3, off+3*tl)
			for h := range g {
				sc := (*[4]float32)(s[h*P+p0+j:])
				dot4(sc, q[h*d:(h+1)*d], k0, k1, k2, k3)
				sc[0], sc[1], sc[2], sc[3] = sc[0]*scale, sc[1]*scale, sc[2]*scale, sc[3]*scale
			}
		}
		for ; j < nb; j++ {
			krow := k.row(0, (base+j)*tl+kh*d)
			for h := range g {
				s[h*P+p0+j] = dot(q[h*d:(h+1)*d], krow) * scale
			}
		}
	}
	// Softmax numerators.
	for h := range g {
		row := s[h*P : (h+1)*P]
		expSub(row, rowMax(row))
	}
	// Weighted sum of V, position-major again, then the normalisation.
	// Four positions of a block go into one pass over the output (axpy4); the order of the
	// additions into every output element is still position order.
	clear(out)
	for p0 := 0; p0 < P; p0 += bs {
		base := int(tbl[p0/bs]) * bs
		nb := min(bs, P-p0)
		j := 0
		for ; j+4 <= nb; j += 4 {
			off := (base+j)*tl + kh*d
			v0, v1, v2, v3 := v.row(0, off), v.row(1, off+tl), v.row(2, off+2*tl), v.row(3, off+3*tl)
			for h := range g {
				a := (*[4]float32)(s[h*P+p0+j:])
				axpy4(out[h*d:(h+1)*d], a, v0, v1, v2, v3)
			}
		}
		for ; j < nb; j++ {
			vrow := v.row(0, (base+j)*tl+kh*d)
			for h := range g {
				axpy(out[h*d:(h+1)*d], s[h*P+p0+j], vrow)
			}
		}
	}
	for h := range g {
		l := sum(s[h*P : (h+1)*P])
		o := out[h*d : (h+1)*d]
		for i := range o {
			o[i] /= l
		}
	}
}
