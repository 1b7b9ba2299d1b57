package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
)

// blockHash identifies the content of a full KV block with everything before it: the
// SHA-256 of its parent block's hash and its own token ids (vLLM's chained block hash).
// Equal hashes mean equal K and V: a position's K and V depend only on the tokens up to it,
// and the kernels are batch-invariant.
type blockHash [sha256.Size]byte

// chainHash returns the hash of the block of ids that follows the block hashed parent (the
// zero hash for the first block).
func chainHash(parent blockHash, ids []int32) blockHash {
	b := make([]byte, len(parent), len(parent)+4*len(ids))
	copy(b, parent[:])
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	return sha256.Sum256(b)
}

// BlockPool hands out KV cache block ids and counts who holds each. Every rank's cache
// has the same blocks (each holds that rank's KV heads), so one pool serves the whole
// group. A sequence holds the blocks of the tokens it has and takes one more as it
// crosses a block boundary; a block returns to the pool when its last holder frees it.
//
// Full blocks can be cached by their hash (automatic prefix caching): a new sequence
// takes the longest cached prefix of its blocks instead of computing it (Lookup), so a
// block may have several holders. A cached block nobody holds stays cached until the pool
// needs it: Alloc takes blocks that cache nothing first, then evicts the cached ones least
// recently freed first.
type BlockPool struct {
	mu     sync.Mutex
	ref    []int32 // holders of each block
	empty  []int32 // free blocks caching nothing, taken from the end
	cached map[blockHash]int32
	hash   []blockHash // of each cached block
	// The free cached blocks, least recently freed first: a list linked through next and
	// prev, whose head is the extra entry len(ref).
	next, prev []int32
	lruLen     int
}

// NewBlockPool makes a pool of blocks 0 … n-1.
func NewBlockPool(n int) *BlockPool {
	p := &BlockPool{ref: make([]int32, n), cached: map[blockHash]int32{}, hash: make([]blockHash, n),
		next: make([]int32, n+1), prev: make([]int32, n+1)}
	for i := n - 1; i >= 0; i-- {
		p.empty = append(p.empty, int32(i))
	}
	p.next[n], p.prev[n] = int32(n), int32(n)
	return p
}

// Alloc takes n blocks, each with one holder, or none with an error saying how many are
// free.
func (p *BlockPool) Alloc(n int) ([]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if free := len(p.empty) + p.lruLen; n > free {
		return nil, fmt.Errorf("engine: KV cache full: %d blocks wanted, %d of %d free", n, free, len(p.ref))
	}
	out := make([]int32, n)
	for i := range out {
		var b int32
		if len(p.empty) > 0 {
			b = p.empty[len(p.empty)-1]
			p.empty = p.empty[:len(p.empty)-1]
		} else { // evict the least recently freed cached block
			b = p.next[len(p.ref)]
			p.unlink(b)
			delete(p.cached, p.hash[b])
		}
		p.ref[b] = 1
		out[i] = b
	}
	return out, nil
}

// Free drops one holder of each block; a block nobody holds returns to the pool, still
// cached if it was. A sequence's blocks are freed last first, so that its tail, which
// others are least likely to share, is evicted first. Freeing a block nobody holds is the
// caller's bug and panics (it would hand one block to two sequences).
func (p *BlockPool) Free(blocks []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		if p.ref[b] <= 0 {
			panic(fmt.Sprintf("engine: KV block %d freed but not held", b))
		}
		if p.ref[b]--; p.ref[b] > 0 {
			continue
		}
		if p.isCached(b) { // to the end of the list: the most recently freed
			head := int32(len(p.ref))
			last := p.prev[head]
			p.next[last], p.prev[b], p.next[b], p.prev[head] = b, last, head, b
			p.lruLen++
		} else {
			p.empty = append(p.empty, b)
		}
	}
}

// Cache records that block b, held and full, holds the block hashed h. A hash already
// cached keeps its block (two sequences computed the same block): b stays uncached.
func (p *BlockPool) Cache(b int32, h blockHash) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.cached[h]; ok || p.isCached(b) {
		return
	}
	p.cached[h], p.hash[b] = b, h
}

// Lookup returns the blocks of the longest prefix of hashes that is cached, taking a
// holder's reference to each.
func (p *BlockPool) Lookup(hashes []blockHash) []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int32
	for _, h := range hashes {
		b, ok := p.cached[h]
		if !ok {
			break
		}
		if p.ref[b] == 0 {
			p.unlink(b)
		}
		p.ref[b]++
		out = append(out, b)
	}
	return out
}

// isCached reports whether b holds a cached block. Called with the pool locked.
func (p *BlockPool) isCached(b int32) bool {
	c, ok := p.cached[p.hash[b]]
	return ok && c == b
}

// unlink takes b, free and cached, off the list. Called with the pool locked.
func (p *BlockPool) unlink(b int32) {
	p.next[p.prev[b]], p.prev[p.next[b]] = p.next[b], p.prev[b]
	p.lruLen--
}

// ForgetCache drops every cached hash (the contents of the blocks are gone: a rebuilt KV
// cache); free cached blocks become blocks that cache nothing.
func (p *BlockPool) ForgetCache() {
	p.mu.Lock()
	defer p.mu.Unlock()
	head := int32(len(p.ref))
	for b := p.next[head]; b != head; b = p.next[b] {
		p.empty = append(p.empty, b)
	}
	p.next[head], p.prev[head], p.lruLen = head, head, 0
	clear(p.cached)
}

// InUse returns how many blocks are held.
func (p *BlockPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ref) - len(p.empty) - p.lruLen
}

// Cached returns how many blocks hold a cached block, held or free.
func (p *BlockPool) Cached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.cached)
}
