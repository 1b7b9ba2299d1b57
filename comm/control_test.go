package comm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestDescriptorSlot: a call published into a descriptor slot reads back whole; a slot
// never written, or caught mid-write (a zero tag, as a writer that died leaves it), reads
// as nothing.
func TestDescriptorSlot(t *testing.T) {
	d := callDesc{seq: 7, op: "reducescatter+rmsnorm+allgather", algo: Tree, proto: LL128, t: dtype.BF16, count: 12345}
	slot := make([]uint64, slotWords)
	var w, got, written descWords
	require.False(t, loadSlot(slot, &got), "never written")
	d.encode(&w)
	storeSlot(slot, &w, &written)
	require.True(t, loadSlot(slot, &got))
	require.True(t, tagOf(got[slotTag], 7))
	require.False(t, tagOf(got[slotTag], 7+publishedDepth))
	require.Equal(t, d, got.decode(7))
	require.True(t, got.sameCall(&w))
	slot[slotTag] = 0 // a writer stopped between its two tag stores
	require.False(t, loadSlot(slot, &got), "mid-write")
}

// TestDescriptorSlotStoresOnlyTheTag: a call that repeats the description its slot holds
// stores its tag alone (the fields left as they are show it); another description
// rewrites the fields.
func TestDescriptorSlotStoresOnlyTheTag(t *testing.T) {
	slot := make([]uint64, slotWords)
	var w, got, written descWords
	d := callDesc{seq: 3, op: "allreduce", algo: OneShot, t: dtype.F32, count: 256}
	d.encode(&w)
	storeSlot(slot, &w, &written)
	slot[slotCount] = 999 // not what a writer stores: stays only if the fields are not written
	d.seq += publishedDepth
	d.encode(&w)
	storeSlot(slot, &w, &written)
	require.True(t, loadSlot(slot, &got))
	require.True(t, tagOf(got[slotTag], d.seq))
	require.Equal(t, 999, got.decode(d.seq).count, "the same description stores only the tag")
	d.seq, d.count = d.seq+publishedDepth, 512
	d.encode(&w)
	storeSlot(slot, &w, &written)
	require.True(t, loadSlot(slot, &got))
	require.Equal(t, d, got.decode(d.seq))
}

// TestCallTag: a call's tag differs from another description's under the same sequence
// number in every field, and from the same description's under another.
func TestCallTag(t *testing.T) {
	base := callDesc{seq: 5, op: "allreduce", algo: OneShot, t: dtype.F32, count: 256}
	tag := func(d callDesc) uint64 {
		var w descWords
		d.encode(&w)
		return w[slotTag]
	}
	for _, d := range []callDesc{
		{seq: 5, op: "allgather", algo: OneShot, t: dtype.F32, count: 256},
		{seq: 5, op: "allreduce", algo: TwoShot, t: dtype.F32, count: 256},
		{seq: 5, op: "allreduce", algo: OneShot, proto: LL, t: dtype.F32, count: 256},
		{seq: 5, op: "allreduce", algo: OneShot, t: dtype.BF16, count: 256},
		{seq: 5, op: "allreduce", algo: OneShot, t: dtype.F32, count: 257},
	} {
		require.True(t, tagOf(tag(d), 5))
		require.NotEqual(t, tag(base), tag(d), "%v", &d)
	}
	next := base
	next.seq++
	require.False(t, tagOf(tag(next), 5))
	require.Equal(t, tag(base)&(tagPublished-1), tag(next)&(tagPublished-1), "the digest depends on the description only")
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

// TestEncodedDescMatchesEncode: the rank's cached encoding of its last description gives
// the words a fresh encode gives, for repeated calls and for a change of any one field.
func TestEncodedDescMatchesEncode(t *testing.T) {
	base := callDesc{op: "allreduce", algo: OneShot, t: dtype.F32, count: 256}
	descs := []callDesc{base, base, base}
	for _, change := range []func(*callDesc){
		func(d *callDesc) { d.op = "allgather" },
		func(d *callDesc) { d.algo = TwoShot },
		func(d *callDesc) { d.proto = LL },
		func(d *callDesc) { d.t = dtype.BF16 },
		func(d *callDesc) { d.count = 257 },
	} {
		d := base
		change(&d)
		descs = append(descs, d, d, base)
	}
	var e encodedDesc
	for i, d := range descs {
		d.seq = uint64(1000 + i)
		var want descWords
		d.encode(&want)
		require.Equal(t, want, e.words(&d), "call %d: %v", i, &d)
	}
}
