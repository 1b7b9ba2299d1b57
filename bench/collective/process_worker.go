//go:build linux

package collective

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/executor"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/topo"
)

// WorkerJob is a worker process's side of MeasureProcesses (the executor job JobName):
// it builds its view of the node, joins the communicator through the driver (the
// all-gather of handles over its connection), then times and checks the calls the driver
// asks for until the driver hangs up. An error is also sent to the driver, so that the
// driver's error names it.
func WorkerJob(w *executor.Worker) error {
	err := runWorker(w)
	if errors.Is(err, io.EOF) {
		return nil // the driver hung up between requests: the ordinary end
	}
	if err != nil {
		_ = w.Conn().Send(ipc.Message{Kind: kindFailed, Body: []byte(err.Error())})
	}
	return err
}

// rankBench is one worker's rank and its buffers.
type rankBench struct {
	s     setup
	op    Op
	c     *comm.Communicator
	rk    *comm.Rank
	st    *device.Stream
	ins   []*device.Buffer // every rank's inputs, as Fill draws them: the reference
	out   *device.Buffer
	size  int64 // the size the inputs were filled for
	count int   // its count per rank
}

// pinWorker pins this worker's process to cpus[rank] where cpus is set, before its node's
// threads start, and returns where the process may run then ("" where nothing is pinned).
func pinWorker(cpus []topo.CPUList, rank int) (string, error) {
	if cpus == nil {
		return "", nil
	}
	if rank >= len(cpus) {
		return "", fmt.Errorf("rank %d: --cpu-affinity gives %d CPU lists", rank, len(cpus))
	}
	if err := topo.PinProcess(cpus[rank]); err != nil {
		return "", fmt.Errorf("rank %d: %w", rank, err)
	}
	allowed, err := topo.AllowedCPUs()
	if err != nil {
		return "", fmt.Errorf("rank %d: %w", rank, err)
	}
	return allowed.String(), nil
}

func runWorker(w *executor.Worker) error {
	conn, rank := w.Conn(), w.Rank()
	var s setup
	if err := recv(conn, kindSetup, &s); err != nil {
		return err
	}
	pinned, err := pinWorker(s.CPUs, rank)
	if err != nil {
		return err
	}
	node, err := device.NewNode(device.NodeConfig{Devices: w.Size(), Hosts: s.Hosts, SMs: s.SMs, Fabric: s.Fabric})
	if err != nil {
		return err
	}
	defer node.Close()
	fault, err := comm.FaultFromEnv()
	if err != nil {
		return err
	}
	c, err := comm.Join(node, comm.Config{BufferBytes: s.BufferBytes, Timeout: s.Timeout, Wire: s.Wire, Fault: fault},
		bootstrap{conn: conn, rank: rank, size: w.Size()})
	if err != nil {
		return err
	}
	defer c.Close()
	rb := &rankBench{s: s, op: Op{Kind: s.Op, N: w.Size()}, c: c, rk: c.Rank(rank)}
	if err := rb.alloc(); err != nil {
		return err
	}
	r := ready{NVLS: c.HasNVLS(), Hosts: c.Hosts(), CPUs: pinned}
	if r.Selector, err = chooseSelector(Options{DType: s.DType, Sizes: []int64{s.MaxSize}, Fabric: s.Fabric, Selector: s.Selector}, c, nil); err != nil {
		return err
	}
	if err := send(conn, kindSetup, r); err != nil {
		return err
	}
	for {
		m, err := conn.Recv()
		if err != nil {
			return err
		}
		var reply benchReply
		switch m.Kind {
		case kindBench:
			reply, err = rb.bench(m.Body)
		case kindCheck:
			reply, err = rb.check(m.Body)
		default:
			err = fmt.Errorf("a request of kind %d, want %d (bench) or %d (check)", m.Kind, kindBench, kindCheck)
		}
		if err != nil {
			return err
		}
		if err := send(conn, m.Kind, reply); err != nil {
			return err
		}
	}
}

// alloc allocates every rank's inputs at the largest size on this rank's device (the
// reference; this rank's own is its input) and this rank's output.
func (rb *rankBench) alloc() error {
	dev := rb.rk.Device()
	var err error
	if rb.st, err = dev.NewStream("comm", 0); err != nil {
		return err
	}
	inLen, outLen := rb.op.lens(rb.op.PerRank(rb.s.MaxSize, rb.s.DType))
	rb.ins = make([]*device.Buffer, rb.op.N)
	for p := range rb.ins {
		if rb.ins[p], err = dev.Alloc(rb.s.DType, inLen); err != nil {
			return err
		}
	}
	rb.out, err = dev.Alloc(rb.s.DType, outLen)
	return err
}

// parse reads a request and fills the inputs for its size, as Measure does in one process.
func (rb *rankBench) parse(body []byte) (benchRequest, error) {
	var q benchRequest
	if err := json.Unmarshal(body, &q); err != nil {
		return q, err
	}
	if q.Choice < 0 || q.Choice >= len(rb.s.Choices) || q.Size < 1 || q.Size > rb.s.MaxSize {
		return q, fmt.Errorf("request for choice %d of %d at %d bytes (largest %d)", q.Choice, len(rb.s.Choices), q.Size, rb.s.MaxSize)
	}
	if q.Size != rb.size {
		rb.size, rb.count = q.Size, rb.op.PerRank(q.Size, rb.s.DType)
		inCount, _ := rb.op.lens(rb.count)
		comm.Fill(rb.ins, inCount, uint64(q.Size))
	}
	return q, nil
}

// bench times the request's calls on this rank.
func (rb *rankBench) bench(body []byte) (benchReply, error) {
	q, err := rb.parse(body)
	if err != nil {
		return benchReply{}, err
	}
	ch := rb.s.Choices[q.Choice]
	d, err := rb.rk.Bench(rb.st, rb.s.Op, ch, rb.ins[rb.rk.Rank()], rb.out, rb.count, q.Warmup, q.Iters, rb.s.Blocking)
	if err != nil {
		return benchReply{}, err
	}
	return benchReply{PerCall: d, Auto: rb.op.auto(rb.c, rb.count, rb.s.DType).String()}, nil
}

// check checks this rank's output of the last call against the float64 reference of every
// rank's seeded inputs (or the exact wire's result), and digests it.
func (rb *rankBench) check(body []byte) (benchReply, error) {
	if _, err := rb.parse(body); err != nil {
		return benchReply{}, err
	}
	_, outCount := rb.op.lens(rb.count)
	out, err := rb.out.View(0, outCount)
	if err != nil {
		return benchReply{}, err
	}
	outs := []*device.Buffer{out}
	var reply benchReply
	switch {
	case rb.s.Wire != comm.WireExact:
		reply.Error = comm.CompareExact(rb.ins, outs, rb.count)
	case rb.s.Op == device.OpReduceScatter:
		// This rank's slice of every rank's input is what its output sums.
		slices := make([]*device.Buffer, len(rb.ins))
		for p, in := range rb.ins {
			if slices[p], err = in.View(rb.rk.Rank()*rb.count, rb.count); err != nil {
				return benchReply{}, err
			}
		}
		reply.Wrong = comm.CountWrong(slices, outs, rb.count)
	case rb.s.Op == device.OpAllGather:
		reply.Wrong = comm.CountWrongAllGather(rb.ins, outs, rb.count)
	default:
		reply.Wrong = comm.CountWrong(rb.ins, outs, rb.count)
	}
	h := fnv.New64a()
	h.Write(out.Bytes8())
	reply.Digest = h.Sum64()
	return reply, nil
}

// bootstrap is a worker's comm.Bootstrap: the all-gather goes through the driver.
type bootstrap struct {
	conn       *ipc.Conn
	rank, size int
}

func (b bootstrap) Rank() int { return b.rank }
func (b bootstrap) Size() int { return b.size }
func (b bootstrap) AllGather(mine []device.IPCHandle) ([][]device.IPCHandle, error) {
	return ipc.GatherHandles(b.conn, b.rank, b.size, mine)
}
