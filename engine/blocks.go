package engine

import (
	"fmt"
	"sync"
)

// BlockPool hands out KV cache block ids. Every rank's cache has the same blocks (each holds
// that rank's KV heads), so one pool serves the whole group.
type BlockPool struct {
	mu   sync.Mutex
	free []int32
	size int
}

// NewBlockPool makes a pool of blocks 0 … n-1.
func NewBlockPool(n int) *BlockPool {
	p := &BlockPool{size: n}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, int32(i))
	}
	return p
}

// Alloc takes n blocks, or none with an error saying how many are free.
func (p *BlockPool) Alloc(n int) ([]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > len(p.free) {
		return nil, fmt.Errorf("engine: KV cache full: %d blocks wanted, %d of %d free", n, len(p.free), p.size)
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	}
	return out, nil
}

// Free returns blocks to the pool.
func (p *BlockPool) Free(blocks []int32) {
	p.mu.Lock()
	p.free = append(p.free, blocks...)
	p.mu.Unlock()
}

// InUse returns how many blocks are allocated.
func (p *BlockPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size - len(p.free)
}
