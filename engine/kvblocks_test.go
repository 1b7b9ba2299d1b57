package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBlockPool(t *testing.T) {
	p := NewBlockPool(4)
	a, err := p.Alloc(3)
	require.NoError(t, err)
	require.Equal(t, []int32{0, 1, 2}, a)
	_, err = p.Alloc(2)
	require.ErrorContains(t, err, "KV cache full: 2 blocks wanted, 1 of 4 free")
	p.Free(a)
	require.Equal(t, 0, p.InUse())
	require.Panics(t, func() { p.Free(a[:1]) }, "a block freed twice")
}

func TestChainHash(t *testing.T) {
	var zero blockHash
	a, b := []int32{1, 2, 3}, []int32{4, 5, 6}
	ha := chainHash(zero, a)
	require.Equal(t, ha, chainHash(zero, []int32{1, 2, 3}), "the same tokens, the same hash")
	require.NotEqual(t, ha, chainHash(zero, []int32{1, 2, 4}))
	require.NotEqual(t, chainHash(ha, b), chainHash(zero, b), "a block's hash depends on everything before it")
	require.NotEqual(t, chainHash(ha, b), chainHash(chainHash(zero, []int32{1, 2, 4}), b))
	require.Equal(t, chainHash(ha, b), chainHash(chainHash(zero, a), b))
}

// TestBlockPoolPrefixCache: cached blocks are shared by reference count, stay cached once
// free, and are evicted least recently freed first (a sequence's tail first), only after
// the blocks that cache nothing.
func TestBlockPoolPrefixCache(t *testing.T) {
	var zero blockHash
	h := make([]blockHash, 4)
	for i := range h {
		parent := zero
		if i > 0 {
			parent = h[i-1]
		}
		h[i] = chainHash(parent, []int32{int32(i)})
	}
	p := NewBlockPool(6)
	seq, err := p.Alloc(3)
	require.NoError(t, err)
	for i, b := range seq {
		p.Cache(b, h[i])
	}
	require.Equal(t, 3, p.Cached())
	p.Cache(seq[0], h[3]) // a block caches one hash
	other, err := p.Alloc(1)
	require.NoError(t, err)
	p.Cache(other[0], h[0]) // a hash keeps its first block
	require.Equal(t, 3, p.Cached())
	p.Free(other)

	shared := p.Lookup(h)
	require.Equal(t, seq, shared, "the longest cached prefix: h[3] is not cached")
	require.Equal(t, 3, p.InUse())
	p.Free(seq)
	require.Equal(t, 3, p.InUse(), "the second holder keeps them")
	p.Free(shared)
	require.Zero(t, p.InUse())
	require.Equal(t, 3, p.Cached(), "free blocks stay cached")
	require.Panics(t, func() { p.Free(seq[:1]) }, "a block freed twice")

	// Three blocks cache nothing: they go first, then the cached ones, tail first.
	fresh, err := p.Alloc(3)
	require.NoError(t, err)
	require.NotContains(t, fresh, seq[0])
	require.NotContains(t, fresh, seq[1])
	require.NotContains(t, fresh, seq[2])
	require.Equal(t, 3, p.Cached())
	evicted, err := p.Alloc(1)
	require.NoError(t, err)
	require.Equal(t, []int32{seq[2]}, evicted, "the tail of the sequence is evicted first")
	require.Equal(t, []int32{seq[0], seq[1]}, p.Lookup(h), "its prefix is still cached")
	p.Free([]int32{seq[0], seq[1]})
	require.Equal(t, []int32{seq[0]}, p.Lookup(h[:1]), "a lookup takes a free block off the eviction list")
	evicted, err = p.Alloc(1)
	require.NoError(t, err)
	require.Equal(t, []int32{seq[1]}, evicted)
	_, err = p.Alloc(1)
	require.ErrorContains(t, err, "KV cache full: 1 blocks wanted, 0 of 6 free")
	p.Free(append(fresh, seq[1], seq[2], seq[0]))
	require.Zero(t, p.InUse())
	require.Equal(t, 1, p.Cached())
}

// TestBlockPoolBackToBack: many allocations and frees, shared and not, keep the counts
// consistent and never hand out a held block.
func TestBlockPoolBackToBack(t *testing.T) {
	const n = 64
	p := NewBlockPool(n)
	held := map[int32]int{}
	var seqs [][]int32
	var zero blockHash
	for i := range 5000 {
		switch {
		case i%7 == 3 && len(seqs) > 0: // share a cached prefix
			hs := []blockHash{chainHash(zero, []int32{int32(i % 5)})}
			if got := p.Lookup(hs); len(got) > 0 {
				held[got[0]]++
				seqs = append(seqs, got)
			}
		case i%3 == 0 && len(seqs) > 0:
			s := seqs[i%len(seqs)]
			seqs = append(seqs[:i%len(seqs)], seqs[i%len(seqs)+1:]...)
			p.Free(s)
			for _, b := range s {
				held[b]--
			}
		default:
			s, err := p.Alloc(1 + i%4)
			if err != nil {
				require.Greater(t, 1+i%4, n-p.InUse())
				continue
			}
			for _, b := range s {
				require.Zero(t, held[b], "block %d handed out while held", b)
				held[b]++
			}
			p.Cache(s[0], chainHash(zero, []int32{int32(i % 5)}))
			seqs = append(seqs, s)
		}
		inUse := 0
		for _, c := range held {
			if c > 0 {
				inUse++
			}
		}
		require.Equal(t, inUse, p.InUse(), "step %d", i)
	}
	for _, s := range seqs {
		p.Free(s)
	}
	require.Zero(t, p.InUse())
	require.LessOrEqual(t, p.Cached(), 5)
}
