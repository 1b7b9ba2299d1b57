package device_test

import (
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

func TestAllocZeroedAligned(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	var bufs []*device.Buffer // kept alive so that later allocations land elsewhere
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		for _, count := range []int{0, 1, 2, 3, 7, 16, 17, 33, 1000, 4097} {
			t.Run(fmt.Sprintf("%v/%d", dt, count), func(t *testing.T) {
				before := d.MemoryUsed()
				b, err := d.Alloc(dt, count)
				require.NoError(t, err)
				bufs = append(bufs, b)
				require.Same(t, d, b.Device())
				require.Equal(t, dt, b.DType())
				require.Equal(t, count, b.Len())
				require.Equal(t, count*dt.Size(), b.Bytes())
				require.False(t, b.IsPeer())
				require.False(t, b.Freed())
				require.Equal(t, before+int64(b.Bytes()), d.MemoryUsed())
				require.Len(t, b.Uint16s(), b.Bytes()/2)
				require.Len(t, b.Float32s(), b.Bytes()/4)
				require.Len(t, b.Uint32s(), b.Bytes()/4)
				for i, w := range b.Uint16s() {
					require.Zerof(t, w, "word %d not zeroed", i)
				}
				p := uintptr(unsafe.Pointer(unsafe.SliceData(b.Float32s())))
				require.NotZero(t, p)
				// An empty buffer has no bytes to align (Go's slicing to capacity 0 keeps
				// the base pointer), so alignment is checked where there is memory.
				if b.Bytes() > 0 {
					require.Zerof(t, p%64, "buffer at %#x is not 64-byte aligned", p)
				}
				require.Equal(t, p, uintptr(unsafe.Pointer(unsafe.SliceData(b.Uint16s()))))
				require.Equal(t, p, uintptr(unsafe.Pointer(unsafe.SliceData(b.Uint32s()))))
			})
		}
	}
	for _, b := range bufs {
		require.NoError(t, b.Free())
	}
	require.Zero(t, d.MemoryUsed())
}

func TestAllocErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	d := dev(t, n, 1)
	for _, tc := range []struct {
		name  string
		t     dtype.DType
		count int
		want  string
	}{
		{"invalid dtype", 0, 4, "invalid dtype"},
		{"dtype 99", 99, 4, "invalid dtype"},
		{"part of a block", dtype.Q4_K, 300, "alloc of 300 q4_k values: not a whole number of 256-value blocks"},
		{"negative count", dtype.F32, -1, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := d.Alloc(tc.t, tc.count)
			require.Error(t, err)
			require.Nil(t, b)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "device 1")
			require.Zero(t, d.MemoryUsed())
		})
	}
}

func TestAllocMemoryAccounting(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1, MemoryBytes: 1024})
	d0, d1 := dev(t, n, 0), dev(t, n, 1)

	a, err := d1.Alloc(dtype.F32, 200) // 800 bytes
	require.NoError(t, err)
	require.EqualValues(t, 800, d1.MemoryUsed())
	require.Zero(t, d0.MemoryUsed(), "accounting is per device")

	_, err = d1.Alloc(dtype.BF16, 200) // 400 more bytes: over the cap
	require.Error(t, err)
	for _, w := range []string{"device 1", "out of memory", "400", "800", "1024"} {
		require.Contains(t, err.Error(), w)
	}
	require.EqualValues(t, 800, d1.MemoryUsed(), "a failed alloc must not leak accounting")

	b, err := d1.Alloc(dtype.F16, 112) // 224 bytes: exactly full
	require.NoError(t, err)
	require.EqualValues(t, 1024, d1.MemoryUsed())
	z, err := d1.Alloc(dtype.F32, 0) // zero bytes always fit
	require.NoError(t, err)
	_, err = d1.Alloc(dtype.F32, 1)
	require.Error(t, err)

	// The other device still has its whole capacity.
	c, err := d0.Alloc(dtype.F32, 256)
	require.NoError(t, err)
	require.EqualValues(t, 1024, d0.MemoryUsed())

	require.NoError(t, a.Free())
	require.True(t, a.Freed())
	require.EqualValues(t, 224, d1.MemoryUsed())
	err = a.Free()
	require.Error(t, err)
	require.Contains(t, err.Error(), "double free")
	require.Contains(t, err.Error(), "device 1")
	require.EqualValues(t, 224, d1.MemoryUsed(), "a double free must not release memory twice")

	a2, err := d1.Alloc(dtype.F32, 200)
	require.NoError(t, err, "freed memory is reusable")
	for _, b := range []*device.Buffer{a2, b, z, c} {
		require.NoError(t, b.Free())
	}
	require.Zero(t, d0.MemoryUsed())
	require.Zero(t, d1.MemoryUsed())
}

func TestBufferViewsShareMemory(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	d := dev(t, n, 0)
	for _, tc := range []struct {
		t     dtype.DType
		count int
	}{
		{dtype.F32, 4},
		{dtype.BF16, 8},
		{dtype.F16, 8},
	} {
		t.Run(tc.t.String(), func(t *testing.T) {
			b, err := d.Alloc(tc.t, tc.count)
			require.NoError(t, err)
			f, u16, u32 := b.Float32s(), b.Uint16s(), b.Uint32s()
			require.Len(t, f, 4)
			require.Len(t, u16, 8)
			require.Len(t, u32, 4)

			f[1] = 1
			require.Equal(t, uint32(0x3f800000), u32[1])
			// Little-endian: the high half of an f32 is its second 16-bit word.
			require.Equal(t, uint16(0x0000), u16[2])
			require.Equal(t, uint16(0x3f80), u16[3])

			u32[2] = math.Float32bits(-2.5)
			require.Equal(t, float32(-2.5), f[2])

			u16[7] = 0x4049 // bf16 3.140625 in the high half of word 3
			require.Equal(t, float32(3.140625), f[3])

			// A fresh view sees the same bytes.
			require.Equal(t, float32(1), b.Float32s()[1])
			require.Equal(t, fmt.Sprintf("device 0 buffer of %d %v", tc.count, tc.t), b.String())
		})
	}
}

func TestPeerAccess(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 3, SMs: 1})
	d0, d1, d2 := dev(t, n, 0), dev(t, n, 1), dev(t, n, 2)

	owner, err := d0.Alloc(dtype.F32, 16)
	require.NoError(t, err)
	h, err := owner.Export()
	require.NoError(t, err)
	require.Equal(t, 0, h.Owner)

	p1, err := d1.OpenPeer(h)
	require.NoError(t, err)
	p2, err := d2.OpenPeer(h)
	require.NoError(t, err)
	require.Zero(t, d1.MemoryUsed(), "a peer mapping allocates nothing")
	for _, p := range []*device.Buffer{p1, p2} {
		require.True(t, p.IsPeer())
		require.Same(t, d0, p.Device(), "a peer view names the owner")
		require.Equal(t, owner.DType(), p.DType())
		require.Equal(t, owner.Len(), p.Len())
		require.Equal(t, owner.Bytes(), p.Bytes())
		require.False(t, p.Freed())
	}

	// Writes through either view reach the same memory.
	p1.Float32s()[3] = 7
	require.Equal(t, float32(7), owner.Float32s()[3])
	require.Equal(t, float32(7), p2.Float32s()[3])
	owner.Uint32s()[5] = 0xdeadbeef
	require.Equal(t, uint32(0xdeadbeef), p1.Uint32s()[5])

	// A second export of the same buffer works and maps the same memory.
	h2, err := owner.Export()
	require.NoError(t, err)
	require.NotEqual(t, h.ID, h2.ID)
	p3, err := d1.OpenPeer(h2)
	require.NoError(t, err)
	require.Equal(t, float32(7), p3.Float32s()[3])

	// Peer views cannot be freed or re-exported.
	err = p1.Free()
	require.Error(t, err)
	require.Contains(t, err.Error(), "peer")
	_, err = p1.Export()
	require.Error(t, err)
	require.Contains(t, err.Error(), "owner")
	require.False(t, owner.Freed())
	require.EqualValues(t, 64, d0.MemoryUsed())

	require.NoError(t, owner.Free())
	require.True(t, p1.Freed(), "a peer view follows its owner")
	require.True(t, p3.Freed())

	for _, hh := range []device.IPCHandle{h, h2} {
		_, err = d1.OpenPeer(hh)
		require.Error(t, err, "opening after Free")
		require.Contains(t, err.Error(), "no such export")
	}
	_, err = owner.Export()
	require.Error(t, err)
	require.Contains(t, err.Error(), "freed")
}

func TestOpenPeerErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	d0, d1 := dev(t, n, 0), dev(t, n, 1)
	b, err := d0.Alloc(dtype.BF16, 8)
	require.NoError(t, err)
	h, err := b.Export()
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		on   *device.Device
		h    device.IPCHandle
		want string
	}{
		{"own handle", d0, h, "own"},
		{"wrong owner", d1, device.IPCHandle{Owner: 2, ID: h.ID}, "no such export"},
		{"owner mismatch with valid id", d0, device.IPCHandle{Owner: 1, ID: h.ID}, "no such export"},
		{"never exported", d1, device.IPCHandle{Owner: 0, ID: h.ID + 100}, "no such export"},
		{"zero handle", d1, device.IPCHandle{}, "no such export"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.on.OpenPeer(tc.h)
			require.Error(t, err)
			require.Nil(t, p)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestBufferView(t *testing.T) {
	n, err := device.NewNode(device.NodeConfig{Devices: 1, SMs: 1})
	require.NoError(t, err)
	defer n.Close()
	d, _ := n.Device(0)
	b, err := d.Alloc(dtype.F32, 10)
	require.NoError(t, err)
	v, err := b.View(4, 3)
	require.NoError(t, err)
	v.Float32s()[0] = 7
	require.Equal(t, float32(7), b.Float32s()[4], "a view shares its buffer's memory")
	require.Equal(t, 3, v.Len())
	require.False(t, v.IsPeer())
	require.ErrorContains(t, v.Free(), "a view is freed with the buffer it belongs to")
	_, err = v.Export()
	require.ErrorContains(t, err, "only the owner can export a whole buffer")
	_, err = b.View(8, 3)
	require.ErrorContains(t, err, "view [8, 11) out of range")
	require.NoError(t, b.Free())
	require.True(t, v.Freed())
}
