package layers

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// seqFixture is a paged cache holding sequences of given lengths, with their dense K and V
// ([len, kvHeads, headDim] each) and block tables of shuffled block ids.
type seqFixture struct {
	cache  *PagedKVCache
	tables [][]int32
	keys   [][]float32
	values [][]float32
}

// newSeqFixture fills layer 1 of a two-layer cache with random K and V for sequences of
// the given lengths, writing each sequence as one prefill batch.
func newSeqFixture(t testing.TB, r *rand.Rand, kvHeads, d, bs int, lens []int) *seqFixture {
	t.Helper()
	return newSeqFixtureOf(t, r, dtype.F32, kvHeads, d, bs, lens)
}

// newSeqFixtureOf is newSeqFixture with a cache of dtype dt; keys and values hold what the
// cache holds, the written values rounded to dt.
func newSeqFixtureOf(t testing.TB, r *rand.Rand, dt dtype.DType, kvHeads, d, bs int, lens []int) *seqFixture {
	t.Helper()
	blocks := 3
	for _, n := range lens {
		blocks += (n + bs - 1) / bs
	}
	c, err := NewPagedKVCache(KVCacheConfig{Layers: 2, NumBlocks: blocks, BlockSize: bs, KVHeads: kvHeads, HeadDim: d, DType: dt})
	require.NoError(t, err)
	ids := r.Perm(blocks)
	f := &seqFixture{cache: c}
	for _, n := range lens {
		nb := (n + bs - 1) / bs
		tbl := make([]int32, nb)
		for i := range tbl {
			tbl[i] = int32(ids[0])
			ids = ids[1:]
		}
		k, v := randF32(r, n*kvHeads*d, 1), randF32(r, n*kvHeads*d, 1)
		pos := make([]int32, n)
		for i := range pos {
			pos[i] = int32(i)
		}
		require.NoError(t, c.Write(1, Batch{Pos: pos, Seq: make([]int32, n), Tables: [][]int32{tbl}}, k, v))
		if dt != dtype.F32 {
			for i := range k {
				k[i], v[i] = dtype.ToF32(dt, dtype.FromF32(dt, k[i])), dtype.ToF32(dt, dtype.FromF32(dt, v[i]))
			}
		}
		f.tables = append(f.tables, tbl)
		f.keys = append(f.keys, k)
		f.values = append(f.values, v)
	}
	return f
}

func TestKVCacheWriteGather(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	f := newSeqFixture(t, r, 2, 8, 4, []int{1, 4, 5, 13})
	for s, tbl := range f.tables {
		n := len(f.keys[s]) / 16
		k, v := make([]float32, n*16), make([]float32, n*16)
		require.NoError(t, f.cache.Gather(1, tbl, n, k, v))
		requireBits(t, f.keys[s], k, "seq %d K", s)
		requireBits(t, f.values[s], v, "seq %d V", s)
		// Layer 0 was never written.
		require.NoError(t, f.cache.Gather(0, tbl, n, k, v))
		require.Equal(t, make([]float32, n*16), k)
	}
	// A decode write lands in the right slot and nowhere else.
	tbl := f.tables[2]
	k, v := randF32(r, 16, 1), randF32(r, 16, 1)
	require.NoError(t, f.cache.Write(1, Batch{Pos: []int32{5}, Tables: [][]int32{tbl}}, k, v))
	gk, gv := make([]float32, 6*16), make([]float32, 6*16)
	require.NoError(t, f.cache.Gather(1, tbl, 6, gk, gv))
	requireBits(t, f.keys[2], gk[:5*16])
	requireBits(t, k, gk[5*16:])
	requireBits(t, v, gv[5*16:])
	K, V := f.cache.Layer(1)
	require.Len(t, K, f.cache.Config().LayerLen())
	require.Len(t, V, f.cache.Config().LayerLen())
	K, V = f.cache.Layer(2)
	require.Nil(t, K)
	require.Nil(t, V)
}

func TestWrapPagedKVCache(t *testing.T) {
	cfg := KVCacheConfig{Layers: 1, NumBlocks: 2, BlockSize: 2, KVHeads: 1, HeadDim: 2}
	k, v := make([]float32, 10), make([]float32, 8)
	c, err := WrapPagedKVCache(cfg, [][]float32{k}, [][]float32{v})
	require.NoError(t, err)
	require.NoError(t, c.Write(0, Batch{Pos: []int32{3}, Tables: [][]int32{{1, 0}}}, []float32{1, 2}, []float32{3, 4}))
	// Position 3 is block table[1] = 0, slot 1: elements 2 and 3 of the storage.
	require.Equal(t, []float32{0, 0, 1, 2, 0, 0, 0, 0, 0, 0}, k)
	require.Equal(t, []float32{0, 0, 3, 4, 0, 0, 0, 0}, v)

	_, err = WrapPagedKVCache(cfg, [][]float32{k}, [][]float32{v[:7]})
	require.ErrorContains(t, err, "layer 0 has 10 K and 7 V elements, want at least 8")
	_, err = WrapPagedKVCache(cfg, nil, nil)
	require.ErrorContains(t, err, "0 K and 0 V layers, want 1")
	_, err = NewPagedKVCache(KVCacheConfig{Layers: 1, NumBlocks: 0, BlockSize: 2, KVHeads: 1, HeadDim: 2})
	require.ErrorContains(t, err, "every size must be positive")
	_, err = NewPagedKVCache(KVCacheConfig{Layers: 1, NumBlocks: 1 << 20, BlockSize: 1 << 10, KVHeads: 8, HeadDim: 128})
	require.ErrorContains(t, err, "overflows")
}

func TestKVCacheErrors(t *testing.T) {
	c, err := NewPagedKVCache(KVCacheConfig{Layers: 2, NumBlocks: 4, BlockSize: 2, KVHeads: 1, HeadDim: 2})
	require.NoError(t, err)
	row := make([]float32, 2)
	for _, tc := range []struct {
		name  string
		layer int
		b     Batch
		k     []float32
		want  string
	}{
		{"layer", 2, Batch{Pos: []int32{0}, Tables: [][]int32{{0}}}, row, "layer 2 not within [0, 2)"},
		{"tables per token", 0, Batch{Pos: []int32{0, 1}, Tables: [][]int32{{0}}}, row, "1 block tables for 2 tokens without Seq"},
		{"seq length", 0, Batch{Pos: []int32{0}, Seq: []int32{0, 0}, Tables: [][]int32{{0}}}, row, "len(Seq)=2, len(Pos)=1"},
		{"seq index", 0, Batch{Pos: []int32{0}, Seq: []int32{1}, Tables: [][]int32{{0}}}, row, "token 0 names sequence 1, not within [0, 1)"},
		{"short table", 0, Batch{Pos: []int32{4}, Tables: [][]int32{{0, 1}}}, row, "token 0 at position 4 needs block 2, its table has 2 blocks of 2"},
		{"negative position", 0, Batch{Pos: []int32{-1}, Tables: [][]int32{{0}}}, row, "token 0 at position -1"},
		{"block id", 0, Batch{Pos: []int32{3}, Tables: [][]int32{{0, 4}}}, row, "token 0: block 1 of its table is 4, not within [0, 4)"},
		{"rows", 0, Batch{Pos: []int32{0}, Tables: [][]int32{{0}}}, make([]float32, 3), "len(k)=3, len(v)=2, want tokens·kvHeads·headDim = 1·2 = 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, c.Write(tc.layer, tc.b, tc.k, row), tc.want)
		})
	}
	buf := make([]float32, 6)
	require.ErrorContains(t, c.Gather(0, []int32{0, -1}, 3, buf, buf), "token 0: block 1 of its table is -1")
	require.ErrorContains(t, c.Gather(0, []int32{0, 1}, 5, buf, buf), "needs block 2, its table has 2 blocks")
	require.ErrorContains(t, c.Gather(0, []int32{0, 1}, 2, buf, buf), "len(k)=6, len(v)=6, want n·kvHeads·headDim = 2·2 = 4")
	require.ErrorContains(t, c.Gather(0, nil, -1, nil, nil), "negative length -1")
	require.NoError(t, c.Gather(0, nil, 0, nil, nil))
}
