package comm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestOneShotAlternates pins the alternating one-shot: a small one-shot call meets its
// peers at one barrier, not two (block 0's barrier count). One that staged its inputs (too
// large for its push region) leaves the closing barrier to the next kernel that is not an
// alternating one-shot, which meets it first (settle); one that pushed them leaves none.
// Calls issued back to back, each with inputs of its own, mixed with two-shot and ring
// calls that write the same staging buffer, all sum what their own inputs hold: a call that
// staged or pushed into the half its peers still read, or a two-shot that did not settle
// first, would hand a peer another call's inputs (and, under -race, race with the peer's
// reads).
func TestOneShotAlternates(t *testing.T) {
	for _, c := range []struct {
		n, count int
		staged   bool
	}{{2, 256, false}, {4, 256, false}, {2, 4096, true}, {4, 4096, true}} {
		t.Run(fmt.Sprintf("tp%d/count=%d", c.n, c.count), func(t *testing.T) {
			n, count := c.n, c.count
			g := newGroup(t, n, device.NVSwitch, Config{BufferBytes: 64 << 10}) // push regions of 1-2K f32, staging halves of 8K
			run := func(algos ...Algo) {
				ins, outs := make([][]*device.Buffer, len(algos)), make([][]*device.Buffer, len(algos))
				for i, algo := range algos {
					ins[i], outs[i] = g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
					Fill(ins[i], count, uint64(100+i))
					for r := range n {
						require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, ins[i][r], outs[i][r], count))
					}
				}
				for r, err := range g.syncAll() {
					require.NoError(t, err, "rank %d", r)
				}
				for i := range algos {
					checkAllReduce(t, ins[i], outs[i], count)
				}
			}
			run(OneShot, OneShot, OneShot)
			for r := range n {
				require.Equal(t, uint32(3), g.c.Rank(r).counter[0], "rank %d: barriers of three one-shot calls", r)
				require.Equal(t, c.staged, g.c.Rank(r).unread, "rank %d: the last one-shot's closing barrier is due (staged) or none (pushed)", r)
			}
			run(TwoShot, OneShot, OneShot, Ring, OneShot, TwoShot, TwoShot, OneShot)
			for r := range n {
				require.Equal(t, c.staged, g.c.Rank(r).unread, "rank %d", r)
			}
		})
	}
}

// TestOneShotPushesInputs pins where a small alternating one-shot's inputs travel: each
// rank writes its own into its region of every peer's push buffer, so that a rank sums
// from its own memory. A pulled call (each rank staging into its own buffer only) would
// leave the peers' regions of a rank's push buffer without the peers' inputs. A rank reads
// its own input in place and leaves its own region alone, unless the call is in place
// (the output overwrites the input), where it pushes to itself too.
func TestOneShotPushesInputs(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("tp%d/inplace=%v", n, inPlace), func(t *testing.T) {
				const count = 128 // 7 copies of it, at 8 ranks, fit pushLimit
				g := newGroup(t, n, device.NVSwitch, Config{})
				in, out, ref := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
				Fill(in, count, 7)
				Fill(ref, count, 7) // the inputs, which an in-place call overwrites
				if inPlace {
					out = in
				}
				for r := range n {
					require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], OneShot, in[r], out[r], count))
				}
				for r, err := range g.syncAll() {
					require.NoError(t, err, "rank %d", r)
				}
				checkAllReduce(t, ref, out, count)
				region := pushLimit / 4
				for r := range n {
					own := g.c.Rank(r).peers[r].pushF32 // seq 0: the first half
					for p := range n {
						want := ref[p].Float32s()[:count]
						if p == r && !inPlace {
							want = make([]float32, count) // never written
						}
						require.Equal(t, want, own[p*region:p*region+count], "rank %d's push buffer, region of rank %d", r, p)
					}
					require.False(t, g.c.Rank(r).unread, "rank %d: a pushed one-shot leaves no barrier to meet", r)
				}
			})
		}
	}
}

// TestOneShotRecordOpensAtItsBarrier pins when an alternating one-shot opens its record: at
// its barrier, once its flags are out, so that the clock read and the recorder's lock run
// while the flags travel. Its prologue leaves the record alone; a one-shot of two barriers
// opens it in its prologue.
func TestOneShotRecordOpensAtItsBarrier(t *testing.T) {
	const count = 256
	g := newGroup(t, 2, device.NVSwitch, Config{})
	in, out := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
	Fill(in, count, 3)
	kernel := func(r, blocks int) *chunkKernel {
		k := newChunkKernel()
		k.own = call{r: g.c.Rank(r), desc: callDesc{op: "allreduce", algo: OneShot, t: dtype.F32, count: count}, wire: WireExact, in: in[r], out: out[r]}
		k.cl, k.n, k.blocks, k.first, k.last, k.oneShot, k.body = &k.own, count, blocks, true, true, true, (*call).oneShot
		return k
	}
	for _, blocks := range []int{1, 2} { // one block alternates; two meet two barriers each
		ks := []*chunkKernel{kernel(0, blocks), kernel(1, blocks)}
		before := g.c.Rank(0).rec.n
		errs := make(chan error, 2*blocks)
		for _, k := range ks { // the second grid's prologues meet the first's closing barrier
			go func() { errs <- k.runPrologue() }()
		}
		for range ks {
			require.NoError(t, <-errs)
		}
		if blocks == 1 {
			require.Equal(t, before, g.c.Rank(0).rec.n, "an alternating one-shot's prologue opened its record")
		} else {
			require.Equal(t, before+1, g.c.Rank(0).rec.n, "a one-shot of two barriers opens its record in its prologue")
		}
		for _, k := range ks {
			for b := range blocks {
				go func() { errs <- k.runBlock(device.Block{Index: b, Grid: blocks}) }()
			}
		}
		for range 2 * blocks {
			require.NoError(t, <-errs)
		}
		for _, k := range ks {
			k.runEpilogue(nil)
		}
		require.Equal(t, before+1, g.c.Rank(0).rec.n, "grid %d: records of one call", blocks)
		last, ok := g.c.Rank(0).rec.Last()
		require.True(t, ok)
		require.Equal(t, Done, last.State, "grid %d", blocks)
		checkAllReduce(t, in, out, count)
	}
}
