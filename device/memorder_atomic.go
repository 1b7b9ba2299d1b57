//go:build race || !amd64

package device

import "sync/atomic"

// StoreRelease32 stores v at p with release order (memorder.go): sync/atomic's store,
// which is stronger.
func StoreRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// StoreRelease64 stores v at p with release order (memorder.go).
func StoreRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// fenceWord is what Fence's locked instruction writes.
var fenceWord atomic.Uint32

// Fence orders every load and store before it before every one after it (memorder.go):
// a sequentially consistent read-modify-write is a full barrier.
func Fence() { fenceWord.Add(1) }
