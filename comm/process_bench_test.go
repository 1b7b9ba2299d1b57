//go:build linux

package comm

import (
	"fmt"
	"testing"
	"time"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
)

// Benchmark protocol: the driver sends kindBatch, every rank runs spec.Batch calls back to
// back, and each rank process answers kindHashes (empty) once its stream drained.
const kindBatch = kindClose + 1

// roleBench runs batches of spec.Calls[0] until the driver closes.
const roleBench = "bench"

// batchRunner issues spec.Batch calls of spec.Calls[0] on a rank and waits for them.
type batchRunner struct {
	rk      *Rank
	s       *device.Stream
	in, out *device.Buffer
	pc      procCall
	batch   int
}

func newBatchRunner(spec *procSpec, rk *Rank) (*batchRunner, error) {
	pc := spec.Calls[0]
	s, err := rk.Device().NewStream("bench", 0)
	if err != nil {
		return nil, err
	}
	in, err := rk.Device().Alloc(pc.DType, pc.Count)
	if err != nil {
		return nil, err
	}
	out, err := rk.Device().Alloc(pc.DType, pc.Count)
	if err != nil {
		return nil, err
	}
	fillSeeded(in, 0, rk.Rank())
	return &batchRunner{rk: rk, s: s, in: in, out: out, pc: pc, batch: spec.Batch}, nil
}

// issue enqueues a batch; sync waits for it.
func (br *batchRunner) issue() error {
	for range br.batch {
		if err := br.pc.issue(br.rk, br.s, br.in, br.out, false); err != nil {
			return err
		}
	}
	return nil
}

func (br *batchRunner) sync() error { return br.s.Synchronize() }

// runBenchRank is a rank process's side of BenchmarkAllReduceProcesses.
func runBenchRank(spec *procSpec, c *Communicator, rank int, conn *ipc.Conn) error {
	br, err := newBatchRunner(spec, c.Rank(rank))
	if err != nil {
		return err
	}
	for {
		m, err := conn.Recv()
		if err != nil {
			return err
		}
		if m.Kind == kindClose {
			return c.Close()
		}
		if err := br.issue(); err != nil {
			return err
		}
		if err := br.sync(); err != nil {
			return err
		}
		if err := conn.Send(ipc.Message{Kind: kindHashes}); err != nil {
			return err
		}
	}
}

// BenchmarkAllReduceProcesses times an Auto all-reduce of f32 at 1 KiB, 64 KiB and 1 MiB
// on 2, 4 and 8 ranks, with every rank in this process (inproc) and with one process per
// rank (process, this process rank 0): the cost of a real address-space boundary. Each
// iteration is a batch of calls issued back to back on every rank; ns/call is the time per
// call.
func BenchmarkAllReduceProcesses(b *testing.B) {
	for _, n := range []int{2, 4, 8} {
		for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
			spec := &procSpec{N: n, Fabric: device.NVSwitch, Timeout: time.Minute, Batch: 32,
				Calls: []procCall{{Op: device.OpAllReduce, Algo: Auto, DType: dtype.F32, Count: size / 4}}}
			b.Run(fmt.Sprintf("inproc/n%d/%dB", n, size), func(b *testing.B) {
				node, err := spec.node()
				if err != nil {
					b.Fatal(err)
				}
				defer node.Close()
				c, err := New(node, spec.config(nil))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				runners := make([]*batchRunner, n)
				for r := range n {
					if runners[r], err = newBatchRunner(spec, c.Rank(r)); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(size * spec.Batch))
				for b.Loop() {
					for _, br := range runners {
						if err := br.issue(); err != nil {
							b.Fatal(err)
						}
					}
					for _, br := range runners {
						if err := br.sync(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spec.Batch), "ns/call")
			})
			b.Run(fmt.Sprintf("process/n%d/%dB", n, size), func(b *testing.B) {
				g := startGroup(b, spec, map[int]string{1: roleBench, 2: roleBench, 3: roleBench, 4: roleBench, 5: roleBench, 6: roleBench, 7: roleBench})
				br, err := newBatchRunner(spec, g.c.Rank(0))
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size * spec.Batch))
				for b.Loop() {
					for r := 1; r < n; r++ {
						if err := g.conns[r].Send(ipc.Message{Kind: kindBatch}); err != nil {
							b.Fatal(err)
						}
					}
					if err := br.issue(); err != nil {
						b.Fatal(err)
					}
					if err := br.sync(); err != nil {
						b.Fatal(err)
					}
					for r := 1; r < n; r++ {
						if m, err := g.conns[r].Recv(); err != nil || m.Kind != kindHashes {
							b.Fatalf("rank %d: kind %d, %v", r, m.Kind, err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spec.Batch), "ns/call")
				b.StopTimer()
				for r := 1; r < n; r++ {
					_ = g.conns[r].Send(ipc.Message{Kind: kindClose})
				}
				for range n - 1 {
					<-g.exits
				}
				_ = g.c.Close()
			})
		}
	}
}
