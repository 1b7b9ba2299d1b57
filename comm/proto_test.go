package comm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// protoChoices are the algorithm × protocol pairs that have their own kernels.
var protoChoices = []Choice{{Ring, LL}, {Ring, LL128}, {Tree, LL}, {Tree, LL128}}

// allReduceOnce runs one all-reduce of ch on every rank and waits for it.
func (g *group) allReduceOnce(t testing.TB, ch Choice, ins, outs []*device.Buffer, count int) {
	t.Helper()
	for r := range g.c.Size() {
		require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, ins[r], outs[r], count))
	}
	for r, err := range g.syncAll() {
		require.NoError(t, err, "rank %d", r)
	}
}

// TestProtocolsMatchSimple: LL and LL128 give, for the ring and the tree, every world size,
// both dtypes and counts around a slot, a piece of every segment and several blocks, the
// right sums, the same bits on every rank, and the same bits as the algorithm under Simple:
// the protocol changes how data travels, never the order of the additions.
func TestProtocolsMatchSimple(t *testing.T) {
	counts := []int{1, 7, 1023, 1921, 3*8*1024 + 5, 70_001}
	if testing.Short() || raceDetector {
		counts = counts[:5]
	}
	for _, n := range []int{1, 2, 3, 4, 6, 8} {
		g := newGroup(t, n, device.NVSwitch, Config{})
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			for _, count := range counts {
				ins, want, outs := g.alloc(t, dt, count), g.alloc(t, dt, count), g.alloc(t, dt, count)
				Fill(ins, count, uint64(n*count))
				for _, ch := range protoChoices {
					t.Run(fmt.Sprintf("n=%d/%v/count=%d/%v", n, dt, count, ch), func(t *testing.T) {
						g.allReduceOnce(t, Choice{ch.Algo, Simple}, ins, want, count)
						g.allReduceOnce(t, ch, ins, outs, count)
						checkAllReduce(t, ins, outs, count)
						for r := range n {
							requireSameBits(t, want[r], outs[r], count, "rank %d against %v under Simple", r, ch.Algo)
						}
					})
				}
			}
		}
	}
}

// requireSameBits fails unless a and b hold the same bits in their first count elements.
func requireSameBits(t testing.TB, a, b *device.Buffer, count int, msg string, args ...any) {
	t.Helper()
	for i := range count {
		if element(a, i) != element(b, i) {
			require.Failf(t, "bits differ", "%s: element %d: %#x, want %#x", fmt.Sprintf(msg, args...), i, element(b, i), element(a, i))
		}
	}
}

// TestProtocolsChunks: messages of many chunks of small registered buffers, in place, so
// that pieces run across chunk boundaries and a chunk's grid differs from the last one's.
func TestProtocolsChunks(t *testing.T) {
	const count = 40_000 + 3
	g := newGroup(t, 4, device.NVSwitch, Config{BufferBytes: 16 << 10})
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, ch := range protoChoices {
			t.Run(fmt.Sprintf("%v/%v", dt, ch), func(t *testing.T) {
				orig, want, bufs := g.alloc(t, dt, count), g.alloc(t, dt, count), g.alloc(t, dt, count)
				Fill(orig, count, 3)
				for r := range bufs {
					copy(bufs[r].Uint16s(), orig[r].Uint16s())
				}
				g.allReduceOnce(t, Choice{ch.Algo, Simple}, orig, want, count)
				g.allReduceOnce(t, ch, bufs, bufs, count)
				checkAllReduce(t, orig, bufs, count)
				requireSameBits(t, want[0], bufs[0], count, "%v against Simple", ch)
			})
		}
	}
}

// TestProtocolsBackToBack issues 1000 calls of mixed sizes, algorithms and protocols
// without waiting in between, so that fast ranks run pieces ahead into the other half of
// the LL/LL128 slots while slow ones still read the last; every result must be right.
func TestProtocolsBackToBack(t *testing.T) {
	const n, calls = 4, 1000
	g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 64 << 10, LamportBytes: 8 << 10})
	rng := rand.New(rand.NewPCG(15, 15))
	mixed := append(append([]Choice{}, protoChoices...), Choice{Ring, Simple}, Choice{Tree, Simple}, Choice{OneShot, ProtoAuto}, Choice{Lamport, ProtoAuto})
	type job struct {
		ch        Choice
		count     int
		ins, outs []*device.Buffer
	}
	jobs := make([]job, calls)
	for i := range jobs {
		count := []int{1, 5, 100, 1500, 3000}[rng.IntN(5)]
		dt := []dtype.DType{dtype.F32, dtype.BF16}[rng.IntN(2)]
		j := job{ch: mixed[rng.IntN(len(mixed))], count: count, ins: g.alloc(t, dt, count), outs: g.alloc(t, dt, count)}
		Fill(j.ins, count, uint64(i))
		jobs[i] = j
	}
	for _, j := range jobs {
		for r := range n {
			require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], j.ch.Algo, j.ch.Proto, j.ins[r], j.outs[r], j.count))
		}
	}
	for _, err := range g.syncAll() {
		require.NoError(t, err)
	}
	for i, j := range jobs {
		t.Run(fmt.Sprintf("call%d-%v", i, j.ch), func(t *testing.T) { checkAllReduce(t, j.ins, j.outs, j.count) })
	}
}

// TestProtocolFlagsWrap: piece numbers that pass the flags' wrap (2^32-2 pieces, hours of
// calls) keep every call right: the flags skip 0, the halves keep alternating.
func TestProtocolFlagsWrap(t *testing.T) {
	const n, count = 4, 3000
	g := newGroup(t, n, device.NVSwitch, Config{})
	for r := range n {
		for i := range g.c.Rank(r).pieces {
			for b := range g.c.Rank(r).pieces[i] {
				g.c.Rank(r).pieces[i][b] = 1<<32 - 2 - 3 // three pieces before the wrap
			}
		}
	}
	ins, want, outs := g.alloc(t, dtype.BF16, count), g.alloc(t, dtype.BF16, count), g.alloc(t, dtype.BF16, count)
	for call := range 8 {
		Fill(ins, count, uint64(call))
		for _, ch := range protoChoices {
			g.allReduceOnce(t, Choice{ch.Algo, Simple}, ins, want, count)
			g.allReduceOnce(t, ch, ins, outs, count)
			requireSameBits(t, want[0], outs[0], count, "call %d %v", call, ch)
		}
	}
	require.Greater(t, g.c.Rank(0).pieces[0][0], uint64(1<<32), "the pieces passed the wrap")
}
