//go:build linux

package executor

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/internal/shmring"
)

// Config says which workers Launch starts and how long it waits for them.
type Config struct {
	// Workers is the number of rank processes, 1 to device.MaxDevices.
	Workers int
	// Job names what every worker runs (a key of the table RunWorker is given: Jobs).
	Job string
	// Program is the binary the workers run; "" is this one (os.Executable), whose hidden
	// worker subcommand runs RunWorker.
	Program string
	// Env is added to the workers' environment (KEY=value), which is otherwise this
	// process's.
	Env []string
	// Output receives the workers' stdout and stderr; nil is this process's stderr, so a
	// worker's panic is seen. A file, not a writer: no goroutine copies it.
	Output *os.File
	// Log receives the driver's notes, such as a connection it refused; nil is os.Stderr.
	Log io.Writer
	// StepBytes is the largest encoded step the ring carries; 0 is DefaultStepBytes.
	StepBytes int
	// ReplyBytes is the largest encoded reply of a worker; 0 is DefaultReplyBytes.
	ReplyBytes int
	// JoinTimeout bounds Launch's wait for every worker to join; 0 is DefaultJoinTimeout.
	JoinTimeout time.Duration
	// ExitTimeout bounds Close's wait for the workers to exit before it kills them; 0 is
	// DefaultExitTimeout.
	ExitTimeout time.Duration
	// StepTimeout bounds every wait on the ring (a broadcast, a gather); 0 waits until a
	// worker answers or dies.
	StepTimeout time.Duration
	// ReplyLag bounds how long, once one worker answered a step, Gather waits for the
	// others (0: no bound): a worker still silent then (stopped, or hung outside its
	// collectives, whose own deadline bounds how far a live rank falls behind its peers)
	// is named with its rank and pid, killed, and fails the executor as a death does.
	ReplyLag time.Duration
	// StallAfter bounds how long a worker may leave a step unanswered while it is not
	// runnable and uses no CPU time (0: no bound): it is then stopped or blocked, not slow,
	// and is named with its rank, pid and state, killed, and fails the executor as a death
	// does. It covers what ReplyLag cannot: a step nobody answered, as with one worker.
	// Make it longer than the longest wait of a live worker outside the CPU (its
	// collectives' deadline): a busy worker, however long its step, is never stalled.
	StallAfter time.Duration
}

// Defaults of Config.
const (
	DefaultStepBytes   = 16 << 20 // a prompt chunk of 512 K tokens and its tables
	DefaultReplyBytes  = 64 << 10 // 16 K sampled ids
	DefaultJoinTimeout = 30 * time.Second
	DefaultExitTimeout = 2 * time.Second
)

// The ring's slots: a batch-16 decode step (3 KB) fits one, and the driver runs up to
// ringSlots chunks ahead of the slowest worker.
const (
	ringSlots     = 16
	ringSlotBytes = 4096
)

// withDefaults fills the zero fields and checks the rest; an error names the field.
func (c Config) withDefaults() (Config, error) {
	c.StepBytes = cmp.Or(c.StepBytes, DefaultStepBytes)
	c.ReplyBytes = cmp.Or(c.ReplyBytes, DefaultReplyBytes)
	c.JoinTimeout = cmp.Or(c.JoinTimeout, DefaultJoinTimeout)
	c.ExitTimeout = cmp.Or(c.ExitTimeout, DefaultExitTimeout)
	if c.Output == nil {
		c.Output = os.Stderr
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	switch {
	case c.Workers < 1 || c.Workers > device.MaxDevices:
		return c, fmt.Errorf("executor: %d workers, want 1 to %d", c.Workers, device.MaxDevices)
	case c.Job == "":
		return c, fmt.Errorf("executor: no job named for the workers")
	case c.JoinTimeout < 0 || c.ExitTimeout < 0 || c.StepTimeout < 0 || c.ReplyLag < 0 || c.StallAfter < 0:
		return c, fmt.Errorf("executor: negative timeout (join %v, exit %v, step %v, reply lag %v, stall after %v)",
			c.JoinTimeout, c.ExitTimeout, c.StepTimeout, c.ReplyLag, c.StallAfter)
	}
	if c.Program == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("executor: the workers' program: %w", err)
		}
		c.Program = exe
	}
	return c, c.ring().Validate()
}

// ring is the shape of the step ring; ReplyBytes and StepBytes round up to whole words.
func (c Config) ring() shmring.Config {
	return shmring.Config{Readers: c.Workers, Slots: ringSlots, SlotBytes: ringSlotBytes,
		ReplyBytes: (c.ReplyBytes + 7) &^ 7, MaxMessage: c.StepBytes}
}
