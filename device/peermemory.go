package device

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
)

// PeerMemory is how a rank allocates memory that its peers map, exports it and maps what a
// peer exported: the seam between a rank's memory and its peers', which collectives register
// their buffers through. A peer never reaches another rank's memory but through a handle the
// owner exported. InProcessMemory implements it for ranks that share an address space,
// SharedMemory for ranks in processes of their own; a CUDA backend implements it with
// cudaMalloc and cudaIpcGetMemHandle / cudaIpcOpenMemHandle, or with cuMemCreate and
// cuMemExportToShareableHandle / cuMemImportFromShareableHandle (POSIX file descriptors).
type PeerMemory interface {
	// Alloc allocates count zeroed values of t on d that d's peers can map.
	Alloc(d *Device, t dtype.DType, count int) (*Buffer, error)
	// Export returns the handle a peer opens to map b, a whole buffer that Alloc returned.
	Export(b *Buffer) (IPCHandle, error)
	// Open maps on d the buffer a peer exported as h.
	Open(d *Device, h IPCHandle) (*Buffer, error)
	// Close unmaps a buffer Open returned, as cudaIpcCloseMemHandle does; the owner's
	// memory is untouched.
	Close(mapped *Buffer) error
}

// InProcessMemory is PeerMemory for ranks that are goroutines of one process: an export is
// an entry in the node's table, and a peer's mapping shares the owner's Go memory.
type InProcessMemory struct{}

// Alloc allocates with Device.Alloc.
func (InProcessMemory) Alloc(d *Device, t dtype.DType, count int) (*Buffer, error) {
	return d.Alloc(t, count)
}

// Export exports with Buffer.Export.
func (InProcessMemory) Export(b *Buffer) (IPCHandle, error) { return b.Export() }

// Open opens with Device.OpenPeer.
func (InProcessMemory) Open(d *Device, h IPCHandle) (*Buffer, error) { return d.OpenPeer(h) }

// Close checks that mapped is a peer's buffer; the mapping is the owner's memory itself, so
// nothing is unmapped.
func (InProcessMemory) Close(mapped *Buffer) error {
	if !mapped.IsPeer() {
		return fmt.Errorf("%v: close: not a peer's buffer", mapped)
	}
	return nil
}

// SharedMemory is PeerMemory for ranks in processes of their own: memory is a sealed memfd
// mapped shared, an export is a file descriptor of it (sent to the peer with SCM_RIGHTS),
// and a peer maps the descriptor it received.
type SharedMemory struct{}

// Alloc allocates with Device.AllocShareable.
func (SharedMemory) Alloc(d *Device, t dtype.DType, count int) (*Buffer, error) {
	return d.AllocShareable(t, count)
}

// Export exports with Buffer.ExportShareable; the handle's file is the caller's to close.
func (SharedMemory) Export(b *Buffer) (IPCHandle, error) { return b.ExportShareable() }

// Open opens with Device.OpenPeer a handle that carries a file; h.File stays the caller's
// to close.
func (SharedMemory) Open(d *Device, h IPCHandle) (*Buffer, error) {
	if h.File == nil {
		return nil, fmt.Errorf("%v: open handle of device %d: no file descriptor came with it", d, h.Owner)
	}
	return d.OpenPeer(h)
}

// Close unmaps mapped with Buffer.Free.
func (SharedMemory) Close(mapped *Buffer) error {
	if !mapped.IsPeer() {
		return fmt.Errorf("%v: close: not a peer's buffer", mapped)
	}
	return mapped.Free()
}
