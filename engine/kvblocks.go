package engine

import (
	"fmt"
	"sync"
)

// BlockPool hands out KV cache block ids and counts who holds each. Every rank's cache
// has the same blocks (each holds that rank's KV heads), so one pool serves the whole
// group. A sequence holds the blocks of the tokens it has and takes one more as it
// crosses a block boundary; a block returns to the pool when its last holder frees it.
type BlockPool struct {
	mu   sync.Mutex
	ref  []int32 // holders of each block
	free []int32 // blocks nobody holds, taken from the end
}

// NewBlockPool makes a pool of blocks 0 … n-1.
func NewBlockPool(n int) *BlockPool {
	p := &BlockPool{ref: make([]int32, n)}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, int32(i))
	}
	return p
}

// Alloc takes n blocks, each with one holder, or none with an error saying how many are
// free.
func (p *BlockPool) Alloc(n int) ([]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.free) {
		return nil, fmt.Errorf("engine: KV cache full: %d blocks wanted, %d of %d free", n, len(p.free), len(p.ref))
	}
	out := make([]int32, n)
	for i := range out {
		b := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.ref[b] = 1
		out[i] = b
	}
	return out, nil
}

// Free drops one holder of each block; a block nobody holds returns to the pool. Freeing
// a block nobody holds is the caller's bug and panics (it would hand one block to two
// sequences).
func (p *BlockPool) Free(blocks []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range blocks {
		if p.ref[b] <= 0 {
			panic(fmt.Sprintf("engine: KV block %d freed but not held", b))
		}
		if p.ref[b]--; p.ref[b] == 0 {
			p.free = append(p.free, b)
		}
	}
}

// InUse returns how many blocks are held.
func (p *BlockPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ref) - len(p.free)
}

// Available returns how many blocks Alloc can take now.
func (p *BlockPool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// Size returns the blocks of the pool.
func (p *BlockPool) Size() int { return len(p.ref) }
