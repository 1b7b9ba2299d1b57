package layers

import (
	"fmt"
	"math"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/vec"
)

// KVCacheConfig is the shape of a paged KV cache: per layer, K and V are each stored as
// [NumBlocks, BlockSize, KVHeads, HeadDim] elements of DType, a block holding BlockSize
// consecutive positions of one sequence.
type KVCacheConfig struct {
	Layers, NumBlocks, BlockSize, KVHeads, HeadDim int
	// DType stores K and V: f32 (0 means f32), or bf16 / f16 (vLLM's kv_cache_dtype), which
	// halve the cache and round every K and V element once, when it is written.
	DType dtype.DType
}

// ElemType is the dtype K and V are stored in: DType, or f32 when it is 0.
func (c KVCacheConfig) ElemType() dtype.DType {
	if c.DType == 0 {
		return dtype.F32
	}
	return c.DType
}

// Validate reports whether every size is positive, the dtype is f32, bf16 or f16, and a
// layer's storage fits an int.
func (c KVCacheConfig) Validate() error {
	if c.Layers <= 0 || c.NumBlocks <= 0 || c.BlockSize <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 {
		return fmt.Errorf("kv cache %+v: every size must be positive", c)
	}
	if !c.ElemType().Scalar() {
		return fmt.Errorf("kv cache %+v: dtype %v is not f32, bf16 or f16", c, c.DType)
	}
	n := 1
	for _, s := range []int{c.NumBlocks, c.BlockSize, c.KVHeads, c.HeadDim} {
		if n > math.MaxInt32/s { // block ids and positions are int32; keep offsets far from overflow
			return fmt.Errorf("kv cache %+v: a layer's storage overflows", c)
		}
		n *= s
	}
	return nil
}

// TokenLen is the number of elements one token's K (or V) occupies in one layer:
// KVHeads·HeadDim.
func (c KVCacheConfig) TokenLen() int { return c.KVHeads * c.HeadDim }

// LayerLen is the number of elements of one layer's K (or V) storage:
// NumBlocks·BlockSize·KVHeads·HeadDim.
func (c KVCacheConfig) LayerLen() int { return c.NumBlocks * c.BlockSize * c.TokenLen() }

// Batch says where the tokens of one step live in their sequences: token t is at position
// Pos[t] of sequence Seq[t], whose KV blocks are Tables[Seq[t]] (block b of the table holds
// positions [b·BlockSize, (b+1)·BlockSize)). A decode step has one token per sequence; a
// prefill (or chunked prefill) has consecutive positions of one sequence; a batch may mix
// both. Seq nil means token t belongs to sequence t (a decode step).
type Batch struct {
	Pos    []int32
	Seq    []int32
	Tables [][]int32
}

// Tokens returns the number of tokens in the step, len(Pos).
func (b Batch) Tokens() int { return len(b.Pos) }

// table returns the block table of token t.
func (b Batch) table(t int) []int32 {
	if b.Seq == nil {
		return b.Tables[t]
	}
	return b.Tables[b.Seq[t]]
}

// PagedKVCache is the KV storage of every layer, paged in blocks of BlockSize tokens (as
// vLLM's PagedAttention): token position p of a sequence with block table tbl lives at
// block tbl[p/BlockSize], slot p%BlockSize, and its K row for kv head h at
//
//	K[layer][((tbl[p/BlockSize]·BlockSize + p%BlockSize)·KVHeads + h)·HeadDim + d]
//
// (V likewise). Which blocks a sequence owns is the engine's business; the cache only reads
// and writes where the tables say. Concurrent writers must write different slots.
type PagedKVCache struct {
	cfg      KVCacheConfig
	k, v     [][]float32 // f32 storage
	k16, v16 [][]uint16  // bf16 or f16 storage
}

// NewPagedKVCache allocates host storage for cfg, zeroed and backed by memory at once
// (populate), as a GPU's KV cache is.
func NewPagedKVCache(cfg KVCacheConfig) (*PagedKVCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	c := &PagedKVCache{cfg: cfg}
	for range cfg.Layers {
		if cfg.ElemType() == dtype.F32 {
			c.k, c.v = append(c.k, make([]float32, cfg.LayerLen())), append(c.v, make([]float32, cfg.LayerLen()))
			populate(c.k[len(c.k)-1])
			populate(c.v[len(c.v)-1])
		} else {
			c.k16, c.v16 = append(c.k16, make([]uint16, cfg.LayerLen())), append(c.v16, make([]uint16, cfg.LayerLen()))
			populate(c.k16[len(c.k16)-1])
			populate(c.v16[len(c.v16)-1])
		}
	}
	return c, nil
}

// WrapPagedKVCache uses caller storage (device buffer views) for an f32 cfg: k[l] and v[l]
// are layer l's K and V, each at least cfg.LayerLen() long (longer slices are cut).
func WrapPagedKVCache(cfg KVCacheConfig, k, v [][]float32) (*PagedKVCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	if cfg.ElemType() != dtype.F32 {
		return nil, fmt.Errorf("layers: kv cache: wrapping f32 storage for a %v cache", cfg.DType)
	}
	if len(k) != cfg.Layers || len(v) != cfg.Layers {
		return nil, fmt.Errorf("layers: kv cache: %d K and %d V layers, want %d", len(k), len(v), cfg.Layers)
	}
	n := cfg.LayerLen()
	c := &PagedKVCache{cfg: cfg, k: make([][]float32, cfg.Layers), v: make([][]float32, cfg.Layers)}
	for l := range k {
		if len(k[l]) < n || len(v[l]) < n {
			return nil, fmt.Errorf("layers: kv cache: layer %d has %d K and %d V elements, want at least %d", l, len(k[l]), len(v[l]), n)
		}
		c.k[l], c.v[l] = k[l][:n:n], v[l][:n:n]
	}
	return c, nil
}

// Config returns the cache's shape.
func (c *PagedKVCache) Config() KVCacheConfig { return c.cfg }

// Layer returns layer l's K and V storage ([NumBlocks, BlockSize, KVHeads, HeadDim] each)
// of an f32 cache, or nils when l is out of range or the cache stores 16-bit elements.
func (c *PagedKVCache) Layer(l int) (k, v []float32) {
	if l < 0 || l >= c.cfg.Layers || c.k == nil {
		return nil, nil
	}
	return c.k[l], c.v[l]
}

// Write stores the K and V rows of every token of b (k and v are [tokens, KVHeads,
// HeadDim]) in layer's storage at the token's position:
//
//	for t := range b.Pos { K[slot(t)] = k[t]; V[slot(t)] = v[t] }
//
// (rounded to the cache's dtype). It does not allocate.
func (c *PagedKVCache) Write(layer int, b Batch, k, v []float32) error {
	if err := c.check("kv write", layer, b, 0, b.Tokens(), false); err != nil {
		return err
	}
	tl, n := c.cfg.TokenLen(), b.Tokens()
	if len(k) != n*tl || len(v) != n*tl {
		return fmt.Errorf("layers: kv write: len(k)=%d, len(v)=%d, want tokens·kvHeads·headDim = %d·%d = %d", len(k), len(v), n, tl, n*tl)
	}
	for t, p := range b.Pos {
		off := c.offset(b.table(t), int(p))
		c.store(layer, off, k[t*tl:(t+1)*tl], v[t*tl:(t+1)*tl])
	}
	return nil
}

// store writes one token's K and V rows at off of layer's storage, rounding them to a
// 16-bit dtype.
func (c *PagedKVCache) store(layer, off int, k, v []float32) {
	n := len(k)
	if c.k != nil {
		copy(c.k[layer][off:off+n], k)
		copy(c.v[layer][off:off+n], v)
		return
	}
	t := c.cfg.DType
	vec.Narrow(t, c.k16[layer][off:off+n], k)
	vec.Narrow(t, c.v16[layer][off:off+n], v)
}

// load reads len(k) elements of layer's K and V storage at off into k and v, widened to
// f32.
func (c *PagedKVCache) load(layer, off int, k, v []float32) {
	n := len(k)
	if c.k != nil {
		copy(k, c.k[layer][off:off+n])
		copy(v, c.v[layer][off:off+n])
		return
	}
	t := c.cfg.DType
	vec.Widen(t, k, c.k16[layer][off:off+n])
	vec.Widen(t, v, c.v16[layer][off:off+n])
}

// Gather copies positions [0, n) of the sequence with block table tbl out of layer's
// storage into dense k and v ([n, KVHeads, HeadDim] each):
//
//	for p := range n { k[p] = K[slot(tbl, p)]; v[p] = V[slot(tbl, p)] }
func (c *PagedKVCache) Gather(layer int, tbl []int32, n int, k, v []float32) error {
	if n < 0 {
		return fmt.Errorf("layers: kv gather: negative length %d", n)
	}
	if n == 0 {
		return nil
	}
	if n-1 > math.MaxInt32 {
		return fmt.Errorf("layers: kv gather: length %d beyond int32 positions", n)
	}
	b := Batch{Pos: []int32{int32(n - 1)}, Tables: [][]int32{tbl}}
	if err := c.check("kv gather", layer, b, 0, 1, true); err != nil {
		return err
	}
	tl := c.cfg.TokenLen()
	if len(k) != n*tl || len(v) != n*tl {
		return fmt.Errorf("layers: kv gather: len(k)=%d, len(v)=%d, want n·kvHeads·headDim = %d·%d = %d", len(k), len(v), n, tl, n*tl)
	}
	for p := range n {
		c.load(layer, c.offset(tbl, p), k[p*tl:(p+1)*tl], v[p*tl:(p+1)*tl])
	}
	return nil
}

// offset is the index of position p's first element in a layer's storage.
func (c *PagedKVCache) offset(tbl []int32, p int) int {
	bs := c.cfg.BlockSize
	return (int(tbl[p/bs])*bs + p%bs) * c.cfg.TokenLen()
}

// check validates layer and tokens [t0, t1) of b: sequence indices, positions, and the
// block ids their tables give for the token's own position (every position up to it when
// history is set, as attention reads them).
// Check validates a batch against the cache before any kernel runs: every token's sequence
// exists and its block table covers the token's position (and its history) with blocks of
// this cache. A batch that passes cannot fail Write or Attention.
func (c *PagedKVCache) Check(b Batch) error { return c.check("batch", 0, b, 0, b.Tokens(), true) }

func (c *PagedKVCache) check(op string, layer int, b Batch, t0, t1 int, history bool) error {
	if layer < 0 || layer >= c.cfg.Layers {
		return fmt.Errorf("layers: %s: layer %d not within [0, %d)", op, layer, c.cfg.Layers)
	}
	if b.Seq == nil {
		if len(b.Tables) != len(b.Pos) {
			return fmt.Errorf("layers: %s: %d block tables for %d tokens without Seq, want one per token", op, len(b.Tables), len(b.Pos))
		}
	} else if len(b.Seq) != len(b.Pos) {
		return fmt.Errorf("layers: %s: len(Seq)=%d, len(Pos)=%d: want equal", op, len(b.Seq), len(b.Pos))
	}
	bs := c.cfg.BlockSize
	for t := t0; t < t1; t++ {
		if b.Seq != nil {
			if s := b.Seq[t]; s < 0 || int(s) >= len(b.Tables) {
				return fmt.Errorf("layers: %s: token %d names sequence %d, not within [0, %d)", op, t, s, len(b.Tables))
			}
		}
		p := int(b.Pos[t])
		tbl := b.table(t)
		if p < 0 || p/bs >= len(tbl) {
			return fmt.Errorf("layers: %s: token %d at position %d needs block %d, its table has %d blocks of %d", op, t, p, p/bs, len(tbl), bs)
		}
		first := p / bs
		if history {
			first = 0
		}
		for i, id := range tbl[first : p/bs+1] {
			if id < 0 || int(id) >= c.cfg.NumBlocks {
				return fmt.Errorf("layers: %s: token %d: block %d of its table is %d, not within [0, %d)", op, t, first+i, id, c.cfg.NumBlocks)
			}
		}
	}
	return nil
}
