package device

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/tpslice/tpslice/dtype"
)

// mapping is the memory of a buffer that other processes can map: a memory file mapped
// shared. The owner keeps the file to export it again; an importer needs only the mapping.
type mapping struct {
	file *os.File // the memory file (memfd); nil in an importer
	mem  []byte   // the whole mapping; nil for an empty buffer
}

// AllocShareable allocates a zeroed buffer of count values of t, as Alloc does, whose memory
// other processes can map: an anonymous memory file (memfd_create) mapped shared, the CPU
// twin of cuMemCreate with a POSIX file descriptor as its shareable handle type. Nothing is
// named in a file system; the memory lives while the owner's buffer or a peer's mapping
// does, and never beyond the processes that hold them. ExportShareable hands it out.
func (d *Device) AllocShareable(t dtype.DType, count int) (*Buffer, error) {
	if err := d.reserve("alloc shareable", t, count); err != nil {
		return nil, err
	}
	m, err := newMapping(fmt.Sprintf("tpslice-device%d", d.id), t.Bytes(count))
	if err != nil {
		d.used.Add(-int64(t.Bytes(count)))
		return nil, fmt.Errorf("%v: alloc shareable of %d %v: %w", d, count, t, err)
	}
	return &Buffer{dev: d, dtype: t, count: count, mem: m.mem, shared: m, owner: d.id}, nil
}

// ExportShareable returns a handle another process can open to map b: a new file descriptor
// of b's memory (File) and what the memory holds, as cuMemExportToShareableHandle gives
// a POSIX file descriptor (or cudaIpcGetMemHandle a handle) for a peer. The descriptor is the
// caller's to send (SCM_RIGHTS) and close; b must come from AllocShareable.
func (b *Buffer) ExportShareable() (IPCHandle, error) {
	switch {
	case b.peer || b.view:
		return IPCHandle{}, fmt.Errorf("%v: export shareable: only the owner can export a whole buffer", b)
	case b.shared == nil:
		return IPCHandle{}, fmt.Errorf("%v: export shareable: the buffer was not allocated shareable (AllocShareable)", b)
	case b.freed.Load():
		return IPCHandle{}, fmt.Errorf("%v: export shareable: buffer was freed", b)
	}
	f, err := b.shared.dup()
	if err != nil {
		return IPCHandle{}, fmt.Errorf("%v: export shareable: %w", b, err)
	}
	return IPCHandle{Owner: b.dev.id, DType: b.dtype, Count: b.count, File: f}, nil
}

// openShareable maps the memory of a handle another process exported into d, as
// cuMemImportFromShareableHandle and cuMemMap do. The handle's file stays the caller's.
func (d *Device) openShareable(h IPCHandle) (*Buffer, error) {
	if !h.DType.Valid() {
		return nil, fmt.Errorf("%v: open shareable handle of device %d: invalid dtype %v", d, h.Owner, h.DType)
	}
	if !h.DType.Whole(h.Count) {
		return nil, fmt.Errorf("%v: open shareable handle of device %d: %d %v values are not a whole number of blocks", d, h.Owner, h.Count, h.DType)
	}
	m, err := openMapping(h.File, h.DType.Bytes(h.Count))
	if err != nil {
		return nil, fmt.Errorf("%v: open shareable handle of device %d (%d %v): %w", d, h.Owner, h.Count, h.DType, err)
	}
	return &Buffer{dev: d, dtype: h.DType, count: h.Count, mem: m.mem, peer: true, shared: m, owner: h.Owner}, nil
}

// handleBytes is the size of a handle's description as MarshalBinary writes it: the owner
// (4 bytes), the dtype (1) and the count (8), little-endian.
const handleBytes = 13

// MarshalBinary writes what a peer process needs besides the file to open a shareable
// handle: its owner, dtype and count. The file travels beside it (SCM_RIGHTS).
func (h IPCHandle) MarshalBinary() ([]byte, error) {
	b := binary.LittleEndian.AppendUint32(nil, uint32(h.Owner))
	b = append(b, byte(h.DType))
	return binary.LittleEndian.AppendUint64(b, uint64(h.Count)), nil
}

// UnmarshalBinary reads a handle's description as MarshalBinary writes it; File is left as
// it was, for the caller to set from the descriptor that came with it.
func (h *IPCHandle) UnmarshalBinary(b []byte) error {
	if len(b) != handleBytes {
		return fmt.Errorf("device: handle description of %d bytes, want %d", len(b), handleBytes)
	}
	owner, t, count := binary.LittleEndian.Uint32(b), dtype.DType(b[4]), binary.LittleEndian.Uint64(b[5:])
	if owner >= MaxNodeDevices || !t.Valid() || count > 1<<47 { // 128 Ti values: more than any device holds
		return fmt.Errorf("device: handle description (owner %d, %v, count %d) out of range", owner, t, count)
	}
	h.Owner, h.DType, h.Count = int(owner), t, int(count)
	return nil
}

// Close closes the handle's file, if it has one. A mapping opened from it stays valid.
func (h IPCHandle) Close() error {
	if h.File == nil {
		return nil
	}
	return h.File.Close()
}
