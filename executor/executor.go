//go:build linux

package executor

import (
	"slices"
	"sync"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/internal/ipc"
)

// Executor is the driver's side of a group of worker processes, one per rank.
type Executor struct {
	cfg     Config
	kids    *ipc.Children
	pids    []int       // by rank; written by Launch before any worker can join
	conns   []*ipc.Conn // by rank; complete once Launch returns
	hangups *ipc.Hangups
	node    *device.Node   // the driver's host memory: its one device holds the ring
	ring    *device.Buffer // the step ring's shared memory
	steps   *DriverSteps
	dir     string         // the socket's directory, gone once Launch returns
	exits   chan *ipc.Exit // every worker's exit as the poller reports it; Close counts them
	control sync.Mutex     // control rounds take turns

	mu      sync.Mutex
	err     error         // the first worker that died or hung up
	failed  chan struct{} // closed when err is set
	closing bool          // Close asked the workers to exit: their exits are no failure

	stop      chan struct{}  // closed by Close: ends the stall watch
	watch     sync.WaitGroup // the stall watch, which Close awaits before it frees the ring
	closeOnce sync.Once
	closeErr  error
}

// Steps returns the driver's end of the step ring.
func (e *Executor) Steps() *DriverSteps { return e.steps }

// World returns the number of workers.
func (e *Executor) World() int { return e.cfg.Workers }

// Pids returns the workers' process ids, by rank.
func (e *Executor) Pids() []int { return slices.Clone(e.pids) }
