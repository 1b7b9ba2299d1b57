package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// decodeBatch is one decode token per fixture sequence, at its last written position.
func (f *seqFixture) decodeBatch() Batch {
	kv := f.cache.Config().TokenLen()
	b := Batch{Tables: f.tables}
	for _, k := range f.keys {
		b.Pos = append(b.Pos, int32(len(k)/kv-1))
	}
	return b
}

// dense returns the dense K and V rows each token of b sees (its sequence's positions up to
// its own).
func (f *seqFixture) dense(b Batch) (keys, values [][]float32) {
	kv := f.cache.Config().TokenLen()
	for t, p := range b.Pos {
		s := t
		if b.Seq != nil {
			s = int(b.Seq[t])
		}
		keys = append(keys, f.keys[s][:(int(p)+1)*kv])
		values = append(values, f.values[s][:(int(p)+1)*kv])
	}
	return keys, values
}

// maxPos is the largest position in b.
func maxPos(b Batch) int {
	m := 0
	for _, p := range b.Pos {
		m = max(m, int(p))
	}
	return m
}

func TestAttentionMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, tc := range []struct {
		heads, kvHeads, d, bs int
		lens                  []int
	}{
		{1, 1, 8, 4, []int{1}},
		{4, 4, 16, 4, []int{3, 9, 1}},    // MHA
		{8, 2, 32, 16, []int{17, 1, 40}}, // GQA
		{4, 1, 64, 8, []int{100, 7}},     // MQA
		{32, 8, 128, 16, []int{300}},     // Llama-3-8B shapes
		{6, 3, 12, 5, []int{23, 24, 25}}, // odd sizes
	} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
			// A 16-bit cache gives bitwise the reference over the values it holds.
			t.Run(fmt.Sprintf("h%d_kv%d_d%d_bs%d/%v", tc.heads, tc.kvHeads, tc.d, tc.bs, dt), func(t *testing.T) {
				f := newSeqFixtureOf(t, r, dt, tc.kvHeads, tc.d, tc.bs, tc.lens)
				b := f.decodeBatch()
				q := randF32(r, b.Tokens()*tc.heads*tc.d, 2)
				keys, values := f.dense(b)
				want := make([]float32, len(q))
				refAttention(want, q, tc.heads, tc.kvHeads, tc.d, b.Pos, keys, values)
				got := make([]float32, len(q))
				scratch := make([]float32, f.cache.AttentionScratchLen(tc.heads, maxPos(b)+1))
				require.NoError(t, Attention(got, q, tc.heads, f.cache, 1, b, scratch))
				requireBits(t, want, got)

				exact := refAttention64(q, tc.heads, tc.kvHeads, tc.d, b.Pos, keys, values)
				for i := range exact {
					require.InDelta(t, exact[i], got[i], 2e-6, "element %d", i)
				}
			})
		}
	}
}

// TestAttentionPrefillIsCausal runs a prefill and a mixed batch: every token attends its own
// sequence up to its own position, bitwise as the token alone would.
func TestAttentionPrefillIsCausal(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	const heads, kvHeads, d, bs = 8, 2, 16, 4
	f := newSeqFixture(t, r, kvHeads, d, bs, []int{11, 6})
	// Prefill of sequence 0 from position 3, plus the decode token of sequence 1, plus an
	// early position of sequence 1 again.
	b := Batch{Pos: []int32{3, 4, 5, 6, 7, 8, 9, 10, 5, 0}, Seq: []int32{0, 0, 0, 0, 0, 0, 0, 0, 1, 1}, Tables: f.tables}
	q := randF32(r, b.Tokens()*heads*d, 2)
	keys, values := f.dense(b)
	want := make([]float32, len(q))
	refAttention(want, q, heads, kvHeads, d, b.Pos, keys, values)
	got := make([]float32, len(q))
	scratch := make([]float32, AttentionScratchLen(heads, kvHeads, 11))
	require.NoError(t, Attention(got, q, heads, f.cache, 1, b, scratch))
	requireBits(t, want, got)

	hd := heads * d
	for tok := range b.Tokens() {
		one := Batch{Pos: b.Pos[tok : tok+1], Seq: []int32{0}, Tables: [][]int32{f.tables[b.Seq[tok]]}}
		alone := make([]float32, hd)
		require.NoError(t, Attention(alone, q[tok*hd:(tok+1)*hd], heads, f.cache, 1, one, scratch))
		requireBits(t, got[tok*hd:(tok+1)*hd], alone, "token %d alone", tok)
	}
}

// TestAttentionRangeSplit checks that any split of the units over concurrent workers, each
// with its own scratch, gives the same bits as one call.
func TestAttentionRangeSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	const heads, kvHeads, d, bs = 12, 4, 32, 8
	f := newSeqFixture(t, r, kvHeads, d, bs, []int{50, 3, 17, 64, 1})
	b := f.decodeBatch()
	q := randF32(r, b.Tokens()*heads*d, 2)
	whole := make([]float32, len(q))
	scratchLen := AttentionScratchLen(heads, kvHeads, maxPos(b)+1)
	require.NoError(t, Attention(whole, q, heads, f.cache, 1, b, make([]float32, scratchLen)))
	units := b.Tokens() * kvHeads
	for _, workers := range []int{2, 3, 7, units} {
		got := make([]float32, len(q))
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			u0, u1 := w*units/workers, (w+1)*units/workers
			wg.Go(func() {
				errs[w] = AttentionRange(got, q, heads, f.cache, 1, b, make([]float32, scratchLen), u0, u1)
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		requireBits(t, whole, got, "%d workers", workers)
	}
}

func TestAttentionErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	f := newSeqFixture(t, r, 2, 4, 4, []int{6})
	b := f.decodeBatch() // one token at position 5
	ok := make([]float32, 4*4)
	scratch := make([]float32, 2*6)
	for _, tc := range []struct {
		name    string
		out, q  []float32
		heads   int
		layer   int
		b       Batch
		scratch []float32
		u0, u1  int
		want    string
	}{
		{"heads not a multiple", ok, ok, 3, 1, b, scratch, 0, 2, "3 query heads is not a positive multiple of 2 kv heads"},
		{"q length", ok, ok[:15], 4, 1, b, scratch, 0, 2, "len(q)=15, len(out)=16, want tokens·heads·headDim = 1·4·4 = 16"},
		{"units", ok, ok, 4, 1, b, scratch, 1, 3, "units [1, 3) not within [0, 2) (1 tokens · 2 kv heads)"},
		{"scratch", ok, ok, 4, 1, b, scratch[:11], 0, 2, "token 0 at position 5 needs scratch of 2·6 = 12, have 11"},
		{"layer", ok, ok, 4, 5, b, scratch, 0, 2, "layer 5 not within [0, 2)"},
		{"history block", ok, ok, 4, 1, Batch{Pos: []int32{5}, Tables: [][]int32{{-3, f.tables[0][1]}}}, scratch, 0, 2, "token 0: block 0 of its table is -3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := AttentionRange(tc.out, tc.q, tc.heads, f.cache, tc.layer, tc.b, tc.scratch, tc.u0, tc.u1)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.ErrorContains(t, Attention(ok, ok, 4, nil, 1, b, scratch), "nil kv cache")
	require.Zero(t, AttentionScratchLen(4, 0, 10))
}

func TestAttentionDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(59, 60))
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		f := newSeqFixtureOf(t, r, dt, 2, 64, 16, []int{100, 30})
		b := f.decodeBatch()
		q := randF32(r, 2*8*64, 1)
		out := make([]float32, len(q))
		scratch := make([]float32, f.cache.AttentionScratchLen(8, 100))
		require.Zero(t, testing.AllocsPerRun(10, func() {
			if err := Attention(out, q, 8, f.cache, 1, b, scratch); err != nil {
				panic(err)
			}
		}), "%v cache", dt)
	}
}

// TestKVCacheDTypes: a 16-bit cache stores each element rounded once, reads back exactly
// that, is half the size, refuses f32 storage to wrap, and a bad dtype is refused; its
// scratch is the f32 one plus the widened rows.
func TestKVCacheDTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16} {
		f := newSeqFixtureOf(t, r, dt, 2, 8, 4, []int{5, 13})
		for s, tbl := range f.tables {
			n := len(f.keys[s]) / 16
			k, v := make([]float32, n*16), make([]float32, n*16)
			require.NoError(t, f.cache.Gather(1, tbl, n, k, v))
			requireBits(t, f.keys[s], k)
			requireBits(t, f.values[s], v)
		}
		K, V := f.cache.Layer(1)
		require.Nil(t, K, "a 16-bit cache has no f32 storage to hand out")
		require.Nil(t, V)
		require.Equal(t, AttentionScratchLen(8, 2, 50)+4*8, f.cache.AttentionScratchLen(8, 50))
		cfg := f.cache.Config()
		_, err := WrapPagedKVCache(cfg, make([][]float32, cfg.Layers), make([][]float32, cfg.Layers))
		require.ErrorContains(t, err, "wrapping f32 storage for a "+dt.String()+" cache")
	}
	_, err := NewPagedKVCache(KVCacheConfig{Layers: 1, NumBlocks: 1, BlockSize: 2, KVHeads: 1, HeadDim: 2, DType: dtype.DType(99)})
	require.ErrorContains(t, err, "is not f32, bf16 or f16")
}

func FuzzAttention(f *testing.F) {
	f.Add(uint8(2), uint8(1), uint8(8), uint8(4), uint16(30), uint8(3), uint64(1))
	f.Add(uint8(4), uint8(4), uint8(33), uint8(1), uint16(5), uint8(1), uint64(2))
	f.Fuzz(func(t *testing.T, group, kvHeads, d, bs uint8, maxLen uint16, seqs uint8, seed uint64) {
		KV, G, D, BS := int(kvHeads%4)+1, int(group%4)+1, int(d%70)+1, int(bs%17)+1
		r := rand.New(rand.NewPCG(seed, 61))
		lens := make([]int, int(seqs%4)+1)
		for i := range lens {
			lens[i] = r.IntN(int(maxLen%200)+1) + 1
		}
		dt := []dtype.DType{dtype.F32, dtype.BF16, dtype.F16}[seed%3]
		fx := newSeqFixtureOf(t, r, dt, KV, D, BS, lens)
		b := fx.decodeBatch()
		// Also a random earlier position per sequence, as in a prefill chunk.
		b.Seq = []int32{}
		pos := []int32{}
		for s, p := range b.Pos {
			b.Seq = append(b.Seq, int32(s), int32(s))
			pos = append(pos, p, int32(r.IntN(int(p)+1)))
		}
		b.Pos = pos
		heads := G * KV
		q := randF32(r, b.Tokens()*heads*D, 3)
		keys, values := fx.dense(b)
		want := make([]float32, len(q))
		refAttention(want, q, heads, KV, D, b.Pos, keys, values)
		got := make([]float32, len(q))
		scratch := make([]float32, fx.cache.AttentionScratchLen(heads, maxPos(b)+1))
		require.NoError(t, Attention(got, q, heads, fx.cache, 1, b, scratch))
		requireBits(t, want, got)
		exact := refAttention64(q, heads, KV, D, b.Pos, keys, values)
		for i := range exact {
			if math.Abs(exact[i]-float64(got[i])) > 1e-5 {
				require.InDelta(t, exact[i], got[i], 1e-5, "element %d", i)
			}
		}
	})
}
