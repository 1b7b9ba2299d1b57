//go:build linux

package executor

import (
	"github.com/tpslice/tpslice/internal/stepwire"
)

// Jobs returns the jobs a driver can name, by name: the table the worker subcommand runs
// with.
//
//	ping   answers every step with pingReply, until the driver hangs up
func Jobs() map[string]Job {
	return map[string]Job{"ping": ping}
}

// ping answers every step the driver sends with a digest of it, until the driver hangs up:
// the shape of a rank's loop, and what the tests check the ring with.
func ping(w *Worker) error {
	steps := w.Steps()
	for {
		step, err := steps.Next()
		if err == nil {
			err = steps.Reply(pingReply(step, w.Rank()))
		}
		if err != nil {
			select {
			case <-w.Done():
				return nil // the driver hung up: the ordinary end
			default:
				return err
			}
		}
	}
}

// pingReply is ping's answer to step: its number, and as ids the rank, the token count and
// the wrapping sums of the ids and of the positions.
func pingReply(step stepwire.Step, rank int) stepwire.Reply {
	var ids, pos int32
	for i, id := range step.Forward.IDs {
		ids += id
		pos += step.Forward.Batch.Pos[i]
	}
	return stepwire.Reply{Number: step.Number, IDs: []int32{int32(rank), int32(len(step.Forward.IDs)), ids, pos}}
}
