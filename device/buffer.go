package device

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
	"sync/atomic"
	"unsafe"
)

// bufferAlign is the byte alignment of every allocation: one cache line, so that vector
// loads never straddle an allocation's start and flags in different buffers never share a
// line.
const bufferAlign = 64

// Buffer is device memory: count values of one dtype on one device (for a block type, a
// whole number of its blocks). Its views (Float32s, Uint16s, Uint32s, Bytes8) reinterpret
// the same bytes, as a kernel would cast a pointer; kernels on any stream and peers that
// opened the buffer see the same memory.
type Buffer struct {
	dev   *Device // owner
	dtype dtype.DType
	count int
	mem   []byte
	freed atomic.Bool
	peer  bool    // a peer's view of another device's buffer
	view  bool    // part of another buffer (View)
	base  *Buffer // the allocation a peer mapping or view belongs to
	off   int     // a view's first element in base

	shared *mapping // memory other processes can map (AllocShareable, or a mapping of a peer's)
	owner  int      // device id of the memory's owner (another process's, for such a mapping)
}

func newBuffer(d *Device, t dtype.DType, count int) *Buffer {
	bytes := t.Bytes(count)
	words := make([]uint64, (bytes+bufferAlign)/8+1)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw)))) & (bufferAlign - 1)
	return &Buffer{dev: d, dtype: t, count: count, mem: raw[off : off+bytes : off+bytes], owner: d.id}
}

// Device returns the device that owns the memory, or for a mapping of memory that another
// process exported (OpenPeer of a shareable handle), the device that mapped it.
func (b *Buffer) Device() *Device { return b.dev }

// Owner returns the id of the device that owns the memory, in this process or another.
func (b *Buffer) Owner() int { return b.owner }

// DType returns the element type.
func (b *Buffer) DType() dtype.DType { return b.dtype }

// Len returns the number of values (elements, or the values of the blocks of a block type).
func (b *Buffer) Len() int { return b.count }

// Bytes returns the size in bytes.
func (b *Buffer) Bytes() int { return len(b.mem) }

// IsPeer reports whether b is a peer's mapping of memory owned by another device.
func (b *Buffer) IsPeer() bool { return b.peer }

// String names the buffer as errors print it.
func (b *Buffer) String() string {
	if b.owner != b.dev.id {
		return fmt.Sprintf("%v's mapping of device %d's buffer of %d %v", b.dev, b.owner, b.count, b.dtype)
	}
	return fmt.Sprintf("%v buffer of %d %v", b.dev, b.count, b.dtype)
}

// Float32s views the memory as float32 words (len = Bytes/4).
func (b *Buffer) Float32s() []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)/4)
}

// Uint16s views the memory as 16-bit words (len = Bytes/2), how bf16 and f16 are stored.
func (b *Buffer) Uint16s() []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)/2)
}

// Bytes8 views the memory as bytes, how blocks of quantized values are stored.
func (b *Buffer) Bytes8() []byte { return b.mem }

// Uint32s views the memory as 32-bit words (len = Bytes/4), for flags that are accessed
// with sync/atomic.
func (b *Buffer) Uint32s() []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)/4)
}

// Uint64s views the memory as 64-bit words (len = Bytes/8), for data that is published
// with 64-bit atomic stores.
func (b *Buffer) Uint64s() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b.mem))), len(b.mem)/8)
}

// View returns values [off, off+count) of b as a buffer of its own that shares b's
// memory, as pointer arithmetic on a device allocation does: kernels and collectives can
// work on part of a buffer (a micro-batch's rows). For a block type both must be whole
// blocks. A view cannot be freed or exported.
func (b *Buffer) View(off, count int) (*Buffer, error) {
	if off < 0 || count < 0 || off+count > b.count {
		return nil, fmt.Errorf("%v: view [%d, %d) out of range", b, off, off+count)
	}
	if !b.dtype.Whole(off) || !b.dtype.Whole(count) {
		return nil, fmt.Errorf("%v: view [%d, %d) cuts a %d-value block", b, off, off+count, b.dtype.BlockSize())
	}
	lo, hi := b.dtype.Bytes(off), b.dtype.Bytes(off+count)
	base := b
	if b.base != nil {
		base = b.base
	}
	return &Buffer{dev: b.dev, dtype: b.dtype, count: count, mem: b.mem[lo:hi:hi],
		peer: b.peer, base: base, view: true, off: b.off + off, owner: b.owner}, nil
}

// Allocation returns the allocation b is part of and b's first element in it (b itself
// and 0 for a whole buffer), what a peer needs to map b: the allocation's IPC handle and
// an offset, as with cudaIpcGetMemHandle on the base pointer.
func (b *Buffer) Allocation() (*Buffer, int) {
	if b.view {
		return b.base, b.off
	}
	return b, 0
}

// Overlaps reports whether a and b share any memory.
func Overlaps(a, b *Buffer) bool {
	if len(a.mem) == 0 || len(b.mem) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a.mem))), uintptr(unsafe.Pointer(unsafe.SliceData(b.mem)))
	return a0 < b0+uintptr(len(b.mem)) && b0 < a0+uintptr(len(a.mem))
}

// Free releases the memory. A shareable buffer's memory is unmapped and its file closed,
// so a view still in use faults, as a freed device pointer does; the pages live on while
// another process maps them. A peer's mapping of memory exported by another process is
// unmapped the same way (cudaIpcCloseMemHandle); one of memory in this process cannot be
// freed, nor can a view. Freeing twice is an error.
func (b *Buffer) Free() error {
	imported := b.peer && b.shared != nil
	if b.peer && !imported {
		return fmt.Errorf("%v: free: a peer mapping is closed by its owner, not freed", b)
	}
	if b.view {
		return fmt.Errorf("%v: free: a view is freed with the buffer it belongs to", b)
	}
	if b.freed.Swap(true) {
		return fmt.Errorf("%v: double free", b)
	}
	if !imported {
		b.dev.used.Add(-int64(len(b.mem)))
		b.dev.node.unexport(b)
	}
	if b.shared != nil {
		if err := b.shared.release(); err != nil {
			return fmt.Errorf("%v: free: %w", b, err)
		}
	}
	return nil
}

// Freed reports whether the buffer (or, for a peer view, its owner's buffer) was freed.
func (b *Buffer) Freed() bool {
	if b.base != nil {
		return b.base.freed.Load()
	}
	return b.freed.Load()
}
