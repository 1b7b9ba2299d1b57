package layers

import (
	"fmt"
	"math"
)

// KVCacheConfig is the shape of a paged KV cache: per layer, K and V are each stored as
// [NumBlocks, BlockSize, KVHeads, HeadDim] f32, a block holding BlockSize consecutive
// positions of one sequence.
type KVCacheConfig struct {
	Layers, NumBlocks, BlockSize, KVHeads, HeadDim int
}

// Validate reports whether every size is positive and a layer's storage fits an int.
func (c KVCacheConfig) Validate() error {
	if c.Layers <= 0 || c.NumBlocks <= 0 || c.BlockSize <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 {
		return fmt.Errorf("kv cache %+v: every size must be positive", c)
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

// TokenLen is the number of f32 one token's K (or V) occupies in one layer:
// KVHeads·HeadDim.
func (c KVCacheConfig) TokenLen() int { return c.KVHeads * c.HeadDim }

// LayerLen is the number of f32 of one layer's K (or V) storage:
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
	cfg  KVCacheConfig
	k, v [][]float32
}

// NewPagedKVCache allocates host storage for cfg, zeroed.
func NewPagedKVCache(cfg KVCacheConfig) (*PagedKVCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	k, v := make([][]float32, cfg.Layers), make([][]float32, cfg.Layers)
	for l := range k {
		k[l] = make([]float32, cfg.LayerLen())
		v[l] = make([]float32, cfg.LayerLen())
	}
	return &PagedKVCache{cfg: cfg, k: k, v: v}, nil
}

// WrapPagedKVCache uses caller storage (device buffer views) for cfg: k[l] and v[l] are
// layer l's K and V, each at least cfg.LayerLen() long (longer slices are cut).
func WrapPagedKVCache(cfg KVCacheConfig, k, v [][]float32) (*PagedKVCache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("layers: %w", err)
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

// Layer returns layer l's K and V storage ([NumBlocks, BlockSize, KVHeads, HeadDim] each),
// or nils when l is out of range.
func (c *PagedKVCache) Layer(l int) (k, v []float32) {
	if l < 0 || l >= c.cfg.Layers {
		return nil, nil
	}
	return c.k[l], c.v[l]
}

// Write stores the K and V rows of every token of b (k and v are [tokens, KVHeads,
// HeadDim]) in layer's storage at the token's position:
//
//	for t := range b.Pos { K[slot(t)] = k[t]; V[slot(t)] = v[t] }
//
// It does not allocate.
func (c *PagedKVCache) Write(layer int, b Batch, k, v []float32) error {
	if err := c.check("kv write", layer, b, 0, b.Tokens(), false); err != nil {
		return err
	}
	tl, n := c.cfg.TokenLen(), b.Tokens()
	if len(k) != n*tl || len(v) != n*tl {
		return fmt.Errorf("layers: kv write: len(k)=%d, len(v)=%d, want tokens·kvHeads·headDim = %d·%d = %d", len(k), len(v), n, tl, n*tl)
	}
	K, V := c.k[layer], c.v[layer]
	for t, p := range b.Pos {
		off := c.offset(b.table(t), int(p))
		copy(K[off:off+tl], k[t*tl:(t+1)*tl])
		copy(V[off:off+tl], v[t*tl:(t+1)*tl])
	}
	return nil
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
	K, V := c.k[layer], c.v[layer]
	for p := range n {
		off := c.offset(tbl, p)
		copy(k[p*tl:(p+1)*tl], K[off:off+tl])
		copy(v[p*tl:(p+1)*tl], V[off:off+tl])
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
