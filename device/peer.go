package device

import (
	"fmt"
	"os"

	"github.com/tpslice/tpslice/dtype"
)

// IPCHandle names a buffer that its owner exported so that peer devices can map it. Export
// gives a handle for peers in the same process, as cudaIpcGetMemHandle does: a plain value
// with an ID. ExportShareable gives one for peers in other processes, as
// cuMemExportToShareableHandle does: a file descriptor of the memory (File) and its
// description, which MarshalBinary encodes for the message that carries the descriptor.
type IPCHandle struct {
	Owner int         // device id of the owner
	ID    uint64      // node-unique id of an export within the process; 0 with a File
	DType dtype.DType // what the memory holds
	Count int
	File  *os.File // the memory of an export to another process; nil within the process
}

// Export makes b openable by peer devices and returns its handle.
func (b *Buffer) Export() (IPCHandle, error) {
	if b.peer || b.view {
		return IPCHandle{}, fmt.Errorf("%v: export: only the owner can export a whole buffer", b)
	}
	if b.freed.Load() {
		return IPCHandle{}, fmt.Errorf("%v: export: buffer was freed", b)
	}
	n := b.dev.node
	id := n.nextID.Add(1)
	n.mu.Lock()
	n.exported[id] = b
	n.mu.Unlock()
	return IPCHandle{Owner: b.dev.id, ID: id, DType: b.dtype, Count: b.count}, nil
}

func (n *Node) unexport(b *Buffer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, e := range n.exported {
		if e == b {
			delete(n.exported, id)
		}
	}
}

// OpenPeer maps a buffer exported by another device into d, as cudaIpcOpenMemHandle does
// (cuMemImportFromShareableHandle and cuMemMap for a handle with a File, which stays the
// caller's to close). The view shares the owner's memory; loads and stores through it reach
// the owner.
func (d *Device) OpenPeer(h IPCHandle) (*Buffer, error) {
	if h.Owner == d.id {
		return nil, fmt.Errorf("%v: open peer handle %d of device %d: the buffer is the device's own", d, h.ID, h.Owner)
	}
	if h.File != nil {
		return d.openShareable(h)
	}
	n := d.node
	n.mu.Lock()
	b, ok := n.exported[h.ID]
	n.mu.Unlock()
	if !ok || b.dev.id != h.Owner {
		return nil, fmt.Errorf("%v: open peer handle %d of device %d: no such export (freed or never exported)", d, h.ID, h.Owner)
	}
	return &Buffer{dev: b.dev, dtype: b.dtype, count: b.count, mem: b.mem, peer: true, base: b, owner: b.owner}, nil
}
