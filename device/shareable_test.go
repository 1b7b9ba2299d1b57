//go:build linux

package device_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
)

// memfdName is the prefix of the memory files AllocShareable creates, as /proc shows them.
const memfdName = "memfd:tpslice-device"

// memfdLeft returns what of this process still maps or holds a shareable buffer's memory.
func memfdLeft() ([]string, error) { return testutil.MemfdLeft(memfdName) }

// requireNoMemfd checks that this process neither maps nor holds the memory file of a
// shareable buffer.
func requireNoMemfd(t testing.TB) {
	t.Helper()
	left, err := memfdLeft()
	require.NoError(t, err)
	require.Empty(t, left, "a freed buffer's memory is still mapped or open")
}

func TestShareableMapsTheSameMemory(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	d0, d1 := dev(t, n, 0), dev(t, n, 1)
	b, err := d0.AllocShareable(dtype.F32, 1000)
	require.NoError(t, err)
	require.EqualValues(t, 4000, d0.MemoryUsed())
	require.Zero(t, b.Float32s()[999], "zeroed")
	h, err := b.ExportShareable()
	require.NoError(t, err)
	require.Equal(t, device.IPCHandle{Owner: 0, DType: dtype.F32, Count: 1000, File: h.File}, h)
	// Mapped a second time, as a peer process maps it: the same pages under another address.
	p, err := d1.OpenPeer(h)
	require.NoError(t, err)
	require.NoError(t, h.Close(), "the mapping outlives the descriptor it came from")
	require.False(t, device.Overlaps(b, p), "two mappings, two address ranges")
	require.True(t, p.IsPeer())
	require.Equal(t, d1, p.Device())
	require.Equal(t, 0, p.Owner())
	require.Equal(t, "device 1's mapping of device 0's buffer of 1000 f32", p.String())
	require.Zero(t, d1.MemoryUsed(), "a mapping allocates nothing on the device that maps it")

	b.Float32s()[7] = 3.5
	require.Equal(t, float32(3.5), p.Float32s()[7])
	p.Float32s()[999] = -1
	require.Equal(t, float32(-1), b.Float32s()[999])
	v, err := p.View(990, 10)
	require.NoError(t, err)
	require.Equal(t, 0, v.Owner())
	require.Equal(t, float32(-1), v.Float32s()[9])

	require.NoError(t, p.Free(), "a mapping of another process's memory is unmapped by Free")
	require.ErrorContains(t, p.Free(), "double free")
	require.NoError(t, b.Free())
	require.Zero(t, d0.MemoryUsed())
	requireNoMemfd(t)
}

func TestShareableEmptyBuffer(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
	b, err := dev(t, n, 0).AllocShareable(dtype.BF16, 0)
	require.NoError(t, err)
	h, err := b.ExportShareable()
	require.NoError(t, err)
	p, err := dev(t, n, 1).OpenPeer(h)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.Zero(t, p.Bytes())
	require.NoError(t, p.Free())
	require.NoError(t, b.Free())
	requireNoMemfd(t)
}

func TestShareableErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1, MemoryBytes: 4096})
	d0, d1 := dev(t, n, 0), dev(t, n, 1)
	_, err := d0.AllocShareable(dtype.F32, 2000)
	require.ErrorContains(t, err, "out of memory")
	_, err = d0.AllocShareable(dtype.Q4_0, 3)
	require.ErrorContains(t, err, "alloc shareable of 3 q4_0 values: not a whole number of 32-value blocks")

	heap, err := d0.Alloc(dtype.F32, 4)
	require.NoError(t, err)
	_, err = heap.ExportShareable()
	require.ErrorContains(t, err, "not allocated shareable (AllocShareable)")

	b, err := d0.AllocShareable(dtype.F32, 16)
	require.NoError(t, err)
	v, err := b.View(0, 4)
	require.NoError(t, err)
	_, err = v.ExportShareable()
	require.ErrorContains(t, err, "only the owner can export a whole buffer")

	h, err := b.ExportShareable()
	require.NoError(t, err)
	defer h.Close()
	_, err = d0.OpenPeer(h)
	require.ErrorContains(t, err, "the buffer is the device's own")
	big := h
	big.Count = 17
	_, err = d1.OpenPeer(big)
	require.ErrorContains(t, err, "open shareable handle of device 0 (17 f32): the handle describes 68 bytes, its memory file holds 64")
	ragged := h
	ragged.DType = dtype.Q8_0
	_, err = d1.OpenPeer(ragged)
	require.ErrorContains(t, err, "16 q8_0 values are not a whole number of blocks")

	invalid := h
	invalid.DType = 200
	_, err = d1.OpenPeer(invalid)
	require.ErrorContains(t, err, "invalid dtype dtype(200)")

	noFile := h
	noFile.File = nil
	_, err = device.SharedMemory{}.Open(d1, noFile)
	require.ErrorContains(t, err, "no file descriptor came with it")

	// A file its owner could shrink under the mapping is refused.
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	unsealed := os.NewFile(uintptr(fd), "unsealed")
	defer unsealed.Close()
	require.NoError(t, unsealed.Truncate(64))
	_, err = d1.OpenPeer(device.IPCHandle{Owner: 0, DType: dtype.F32, Count: 16, File: unsealed})
	require.ErrorContains(t, err, "not sealed against resizing")

	require.NoError(t, b.Free())
	_, err = b.ExportShareable()
	require.ErrorContains(t, err, "buffer was freed")

	// A peer mapping within the process is still not the mapper's to free.
	c, err := d0.AllocShareable(dtype.F32, 4)
	require.NoError(t, err)
	hc, err := c.Export()
	require.NoError(t, err)
	pc, err := d1.OpenPeer(hc)
	require.NoError(t, err)
	require.ErrorContains(t, pc.Free(), "closed by its owner")
	require.NoError(t, c.Free())
	require.NoError(t, heap.Free())
}

func TestHandleMarshalRoundTrip(t *testing.T) {
	h := device.IPCHandle{Owner: 5, DType: dtype.BF16, Count: 1 << 33}
	body, err := h.MarshalBinary()
	require.NoError(t, err)
	var got device.IPCHandle
	require.NoError(t, got.UnmarshalBinary(body))
	require.Equal(t, h, got)

	require.ErrorContains(t, got.UnmarshalBinary(body[:12]), "12 bytes, want 13")
	bad := append([]byte(nil), body...)
	bad[4] = 200
	require.ErrorContains(t, got.UnmarshalBinary(bad), "out of range")
	bad = append([]byte(nil), body...)
	bad[0] = 99
	require.ErrorContains(t, got.UnmarshalBinary(bad), "owner 99")
}

// TestPeerMemoryImplementations runs the seam's contract on both implementations: memory
// that one device allocates and exports, another opens and sees.
func TestPeerMemoryImplementations(t *testing.T) {
	for name, pm := range map[string]device.PeerMemory{"in-process": device.InProcessMemory{}, "shared": device.SharedMemory{}} {
		t.Run(name, func(t *testing.T) {
			n := newNode(t, device.NodeConfig{Devices: 2, SMs: 1})
			b, err := pm.Alloc(dev(t, n, 0), dtype.F16, 64)
			require.NoError(t, err)
			h, err := pm.Export(b)
			require.NoError(t, err)
			p, err := pm.Open(dev(t, n, 1), h)
			require.NoError(t, err)
			require.NoError(t, h.Close())
			b.Uint16s()[63] = 0x3c00
			require.Equal(t, uint16(0x3c00), p.Uint16s()[63])
			require.Equal(t, 0, p.Owner())
			require.ErrorContains(t, pm.Close(b), "not a peer's buffer")
			require.NoError(t, pm.Close(p))
			require.NoError(t, b.Free())
			requireNoMemfd(t)
		})
	}
}
