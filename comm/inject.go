package comm

import (
	"errors"
	"fmt"
	"os"

	"github.com/tpslice/tpslice/device"
)

// runBlock runs block b of a call's chunk at off of n elements: body, unless an injected
// fault replaces it. A panic becomes the rank's error.
func (cl *call) runBlock(body func(*call, device.Block, int, int) error, b device.Block, off, n int) (err error) {
	defer cl.wakeSiblings(&err)
	defer cl.recoverBlock(b, &err)
	if cl.fault != 0 {
		switch cl.fault {
		case FaultStall:
			return cl.stall(b)
		case FaultSkip:
			return nil
		case FaultPanic:
			if b.Index == 0 {
				panic(fmt.Errorf("%w (%s %v)", ErrInjected, EnvFault, cl.r.c.cfg.Fault.fault))
			}
		case FaultExit:
			if b.Index == 0 {
				cl.locate(b, "exit") // the record the peers read once the process is gone
				fmt.Fprintf(os.Stderr, "tpslice: rank %d: %s %v: exiting (status %d)\n", cl.r.rank, EnvFault, cl.r.c.cfg.Fault.fault, FaultExitStatus)
				os.Exit(FaultExitStatus)
			}
		}
	}
	return body(cl, b, off, n)
}

// recoverBlock turns a panic of block b into the rank's error, which names the call, and
// fails the communicator so that the peers stop waiting for this rank at once.
func (cl *call) recoverBlock(b device.Block, err *error) {
	p := recover()
	if p == nil {
		return
	}
	cause, ok := p.(error)
	if !ok {
		cause = fmt.Errorf("%v", p)
	}
	*err = cl.fail(fmt.Errorf("%s: %w", cl.locate(b, "panic"), cause))
}

// stall holds block b, as a hung rank would, until the communicator fails or closes, or
// twice its Timeout passed: the peers' deadline expires first and names this rank.
func (cl *call) stall(b device.Block) error {
	const what = "stall"
	if b.Index == 0 {
		cl.locate(b, what)
	}
	limit := 2 * cl.r.c.cfg.Timeout
	err := cl.r.peers[cl.r.rank].bell.WaitUntil(limit, func() bool { return cl.aborted(b) }, func() bool { return false })
	if errors.Is(err, device.ErrDeadline) {
		return cl.fail(fmt.Errorf("%s: stalled for %v and no peer gave up: %w",
			cl.locate(b, what), limit, ErrInjected))
	}
	return cl.waitError(b, what, nil, err)
}

// wakeSiblings rings this rank's own doorbell when a block failed: its sibling blocks'
// waits then see Block.Aborted. The device rings its own doorbell for them, but between
// processes they sleep on the rank's shared bell.
func (cl *call) wakeSiblings(err *error) {
	if *err != nil {
		cl.r.ringPeer(cl.r.rank)
	}
}
