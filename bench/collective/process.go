//go:build linux

package collective

import (
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/topo"
)

// JobName is the executor job a worker process runs for MeasureProcesses (WorkerJob): the
// name the CLI registers it under.
const JobName = "allreduce"

// The protocol between MeasureProcesses and its workers, over each worker's executor
// connection (kinds from 32: the executor's handshake uses 16-18). Every request is a
// control round: the driver sends it to every worker and waits for every reply. No
// request is on a timed path: each worker times its own calls between two requests.
const (
	kindSetup  uint32 = 32 + iota // driver: the communicator and sweep (setup); worker: ready
	kindBench                     // driver: time a choice at a size (benchRequest); worker: benchReply
	kindCheck                     // driver: check the last call's output (benchRequest); worker: benchReply
	kindFailed                    // worker: its error, as text
)

// setup is what every worker builds: its node, its communicator and the sweep's choices.
type setup struct {
	Op          device.CollectiveOp
	DType       dtype.DType
	MaxSize     int64 // the largest size, which the buffers are allocated for
	Choices     []comm.Choice
	Hosts, SMs  int
	Fabric      device.Fabric
	BufferBytes int
	Timeout     time.Duration
	Wire        comm.Wire
	Selector    string         // default or model:PROFILE: no autotuning across processes
	Blocking    bool           // comm.MeasureOptions.Blocking
	CPUs        []topo.CPUList // Options.CPUs: worker r pins itself to CPUs[r]
}

// ready is a worker's answer to setup: what the report says of its communicator.
type ready struct {
	Selector string
	NVLS     bool
	Hosts    int
	CPUs     string // where the worker may run, once pinned (topo.AllowedCPUs)
}

// benchRequest asks every worker to time choice Choice at Size (warmup untimed calls,
// then Iters timed ones), or with kindCheck to check its output of the last call.
type benchRequest struct {
	Choice        int
	Size          int64
	Warmup, Iters int
}

// benchReply is a worker's answer: its time per call, and with kindCheck its wrong
// elements or wire error and a digest of its output, which every rank of an all-reduce
// must share.
type benchReply struct {
	PerCall time.Duration
	Auto    string // what Auto picks at the size (every rank picks alike)
	Wrong   int
	Error   comm.WireError
	Digest  uint64
}

// send sends v as a message of kind.
func send(c *ipc.Conn, kind uint32, v any) error { return ipc.SendJSON(c, kind, v) }

// recv receives a message of kind into v; a worker's kindFailed becomes its error.
func recv(c *ipc.Conn, kind uint32, v any) error { return ipc.RecvJSON(c, kind, kindFailed, v) }
