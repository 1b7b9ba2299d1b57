//go:build !race

package device

// StoreRelease32 stores v at p with release order (memorder.go).
//
//go:noescape
func StoreRelease32(p *uint32, v uint32)

// StoreRelease64 stores v at p with release order (memorder.go).
//
//go:noescape
func StoreRelease64(p *uint64, v uint64)

// Fence orders every load and store before it before every one after it (memorder.go).
func Fence()
