package comm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestDescriptorSlot: a call published into a descriptor slot reads back whole; a slot
// never written, or caught mid-write (odd version, as a writer that died leaves it), reads
// as nothing.
func TestDescriptorSlot(t *testing.T) {
	d := callDesc{seq: 7, op: "reducescatter+rmsnorm+allgather", algo: Tree, proto: LL128, t: dtype.BF16, count: 12345}
	slot := make([]uint64, slotWords)
	var w, got descWords
	require.False(t, loadSlot(slot, &got), "never written")
	d.encode(&w)
	storeSlot(slot, &w)
	require.True(t, loadSlot(slot, &got))
	require.Equal(t, d, got.decode())
	require.True(t, got.sameCall(&w))
	slot[slotVersion]++ // a writer stopped between its two version stores
	require.False(t, loadSlot(slot, &got), "mid-write")
}

// TestOpNameTooLong: an op whose name a descriptor cannot hold whole is refused, since a
// truncated name would let two different ops pass the mismatch check.
func TestOpNameTooLong(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{})
	in, out := g.alloc(t, dtype.F32, 16), g.alloc(t, dtype.F32, 16)
	err := g.c.Rank(0).LaunchCollective(g.streams[0], Collective{Op: strings.Repeat("x", 33), Algo: OneShot,
		In: in[0], Out: out[0], Count: 16, OutCount: 16, Chunk: 16,
		Block: func(*CallCtx, device.Block, int, int) error { return nil }})
	require.ErrorContains(t, err, `op name "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" is longer than the 32 bytes a published descriptor holds`)
}
