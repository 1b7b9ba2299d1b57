//go:build linux

package executor

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/tpslice/tpslice/internal/shmring"
	"github.com/tpslice/tpslice/internal/stepwire"
)

// DriverSteps is the driver's end of the step ring: it broadcasts each step to every worker
// and gathers their replies, through shared memory. One goroutine uses it at a time (the
// scheduler's loop); a worker's death ends any of its waits with Executor.Err.
type DriverSteps struct {
	w        *shmring.Writer
	failed   func() error                                                      // the executor's Err
	silenced func(s *shmring.SilentError, step uint64, answers []string) error // the executor's silenced
	number   uint64                                                            // the last step's number
	msg      []byte                                                            // the last step, encoded
	raw      [][]byte
	replies  []stepwire.Reply
	// sent counts the messages in the ring and step is the last one's number, for the
	// stall watch (watchStalls), which reads them from its own goroutine.
	sent, step atomic.Uint64
}

// Send broadcasts step to every worker. It returns once the step is in the ring, not once
// it is read: Gather waits for the answers.
func (s *DriverSteps) Send(step stepwire.Step) error {
	if err := s.failed(); err != nil { // the ring would take it: only full slots wait
		return fmt.Errorf("executor: send step %d: %w", step.Number, err)
	}
	msg, err := step.AppendBinary(s.msg[:0])
	if err != nil {
		return fmt.Errorf("executor: send step %d: %w", step.Number, err)
	}
	s.msg, s.number = msg, step.Number
	if err := s.w.Send(msg); err != nil {
		return fmt.Errorf("executor: send step %d: %w", step.Number, err)
	}
	s.step.Store(step.Number)
	s.sent.Add(1) // after step: the watch that sees the message sees its number
	return nil
}

// Gather waits for every worker's reply to the last step sent and returns them by rank,
// valid until the next Gather. Workers still silent Config.ReplyLag after the first reply
// are killed, and the error names them.
func (s *DriverSteps) Gather() ([]stepwire.Reply, error) {
	raw, err := s.w.Gather(s.raw)
	if silent := (*shmring.SilentError)(nil); errors.As(err, &silent) {
		return nil, s.silenced(silent, s.number, s.answers(raw))
	}
	if err != nil {
		return nil, fmt.Errorf("executor: gather: %w", err)
	}
	s.raw = raw
	s.replies = s.replies[:0]
	for rank, b := range raw {
		var r stepwire.Reply
		if err := r.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("executor: gather: rank %d's reply: %w", rank, err)
		}
		s.replies = append(s.replies, r)
	}
	return s.replies, nil
}

// answers are what the workers that did answer a step said, where it was an error (the
// survivors' collectives naming the rank they waited for), by rank.
func (s *DriverSteps) answers(raw [][]byte) []string {
	var out []string
	for rank, b := range raw {
		var r stepwire.Reply
		if b == nil || r.UnmarshalBinary(b) != nil || r.Err == "" {
			continue
		}
		if name := fmt.Sprintf("rank %d: ", rank); strings.HasPrefix(r.Err, name) {
			out = append(out, r.Err)
		} else {
			out = append(out, name+r.Err)
		}
	}
	return out
}

// WorkerSteps is a worker's end of the step ring: it receives every step the driver sends
// and answers each. The job's goroutine uses it; the driver's hangup ends its waits.
type WorkerSteps struct {
	r     *shmring.Reader
	msg   []byte // the last step, as it came
	reply []byte // the last reply, encoded
}

// Next waits for the driver's next step.
func (s *WorkerSteps) Next() (stepwire.Step, error) {
	msg, err := s.r.Recv(s.msg)
	if err != nil {
		return stepwire.Step{}, fmt.Errorf("executor: next step: %w", err)
	}
	s.msg = msg
	var step stepwire.Step
	if err := step.UnmarshalBinary(msg); err != nil {
		return stepwire.Step{}, fmt.Errorf("executor: next step: %w", err)
	}
	return step, nil
}

// Reply answers the last step received.
func (s *WorkerSteps) Reply(r stepwire.Reply) error {
	b, err := r.AppendBinary(s.reply[:0])
	if err != nil {
		return fmt.Errorf("executor: reply to step %d: %w", r.Number, err)
	}
	s.reply = b
	if err := s.r.Reply(b); err != nil {
		return fmt.Errorf("executor: reply to step %d: %w", r.Number, err)
	}
	return nil
}
