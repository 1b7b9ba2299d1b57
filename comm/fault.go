package comm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// EnvFault names the environment variable that injects one fault into a collective call,
// as NCCL's and PyTorch's fault knobs let operators rehearse failures:
// TPSLICE_FAULT=rank:R,call:N,kind:K makes the N-th collective call (1 is the first) of
// rank R, counted from start-up, fail in the way K says (see FaultKind). It fires once.
const EnvFault = "TPSLICE_FAULT"

// ErrInjected is wrapped by the errors that an injected fault raises itself (a kernel's
// panic, a stall that nobody ended); faults that the peers detect are reported as the
// peers see them.
var ErrInjected = errors.New("injected fault")

// FaultKind is how an injected fault breaks its collective call.
type FaultKind uint8

// The kinds of injected faults.
const (
	// FaultStall: every block of the rank's kernel stops before its first barrier until
	// the communicator fails or closes, or twice its Timeout passed; the peers' deadline
	// names the rank.
	FaultStall FaultKind = iota + 1
	// FaultPanic: block 0 of the rank's kernel panics; the panic becomes that rank's error.
	FaultPanic
	// FaultSkip: the rank returns from the call without taking part (it still takes the
	// sequence number, as a rank that lost a call would). The peers' deadline names it, or
	// at once their first barrier, which its next call would otherwise pass for them (with
	// the tree, the first flag of its next call that a parent or child of it takes; under
	// LL and LL128, the first data of its next call that a peer takes).
	FaultSkip
	// FaultCorrupt: block 0 writes a wrong epoch into its first barrier flag on every peer
	// (v+2 where the peers wait for v). With the flag-free algorithm, whose data is its
	// flag, block 0 writes the empty sentinel as the first word of the call's last chunk on
	// every peer, which the peers see as a rank that never arrives. With the tree, block 0
	// writes an epoch its chunk never reaches into its first up flag, and leaves it there.
	// Under LL and LL128, block 0 sends its first step's data with the flag of two pieces
	// ahead, which the receiver reads as corrupt.
	FaultCorrupt
	// FaultExit: block 0 ends the rank's process (exit status FaultExitStatus) as a crash
	// would, mid-call: a rank of its own process dies, and its peers learn it from whoever
	// watches the process (Communicator.MarkExited, Watcher.MarkExited). In a process whose
	// ranks are goroutines it ends them all.
	FaultExit
)

// FaultExitStatus is the exit status of a process that FaultExit ended.
const FaultExitStatus = 86

// String names the kind as TPSLICE_FAULT spells it.
func (k FaultKind) String() string {
	switch k {
	case FaultStall:
		return "stall"
	case FaultPanic:
		return "panic"
	case FaultSkip:
		return "skip"
	case FaultCorrupt:
		return "corrupt"
	case FaultExit:
		return "exit"
	}
	return fmt.Sprintf("fault(%d)", uint8(k))
}

// Fault is one injected fault: the Call-th collective call (1-based, counted from
// start-up) of rank Rank fails as Kind says.
type Fault struct {
	Rank int
	Call uint64
	Kind FaultKind
}

// String writes the fault as TPSLICE_FAULT spells it.
func (f Fault) String() string {
	return fmt.Sprintf("rank:%d,call:%d,kind:%v", f.Rank, f.Call, f.Kind)
}

// ParseFault reads a fault as TPSLICE_FAULT spells it: "rank:R,call:N,kind:K", the three
// fields in any order, N from 1, K one of stall, panic, skip, corrupt or exit.
func ParseFault(spec string) (Fault, error) {
	fail := func(format string, args ...any) (Fault, error) {
		return Fault{}, fmt.Errorf("%s: %s", EnvFault, fmt.Sprintf(format, args...))
	}
	var f Fault
	seen := map[string]bool{}
	for field := range strings.SplitSeq(spec, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(field), ":")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if !ok {
			return fail("field %q: want key:value (rank:R,call:N,kind:K)", field)
		}
		if seen[key] {
			return fail("%s given twice in %q", key, spec)
		}
		seen[key] = true
		switch key {
		case "rank":
			r, err := strconv.Atoi(val)
			if err != nil || r < 0 {
				return fail("rank %q: want a rank number from 0", val)
			}
			f.Rank = r
		case "call":
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil || n == 0 {
				return fail("call %q: want a call number from 1 (the rank's first collective)", val)
			}
			f.Call = n
		case "kind":
			for k := FaultStall; k <= FaultExit; k++ {
				if strings.EqualFold(val, k.String()) {
					f.Kind = k
				}
			}
			if f.Kind == 0 {
				return fail("kind %q: want stall, panic, skip, corrupt or exit", val)
			}
		default:
			return fail("field %q: want rank, call or kind", key)
		}
	}
	for _, key := range []string{"rank", "call", "kind"} {
		if !seen[key] {
			return fail("%q has no %s (want rank:R,call:N,kind:K)", spec, key)
		}
	}
	return f, nil
}

// FaultFromEnv returns an injector for the fault in $TPSLICE_FAULT, or nil when the
// variable is empty or unset.
func FaultFromEnv() (*FaultInjector, error) {
	spec := os.Getenv(EnvFault)
	if spec == "" {
		return nil, nil
	}
	f, err := ParseFault(spec)
	if err != nil {
		return nil, err
	}
	return NewFaultInjector(f), nil
}

// FaultInjector fires one Fault. It counts the faulty rank's collective calls across every
// communicator that it is given to (Config.Fault), so a process that rebuilds its
// communicator after the fault keeps one injector and the fault fires once, counted from
// start-up. Calls are counted as they start on the rank's stream, so each replay of a
// captured graph counts its collectives again. It is safe for concurrent use; a nil
// injector injects nothing.
type FaultInjector struct {
	fault Fault
	calls atomic.Uint64 // collective calls of fault.Rank started so far
}

// NewFaultInjector returns an injector that fires f once.
func NewFaultInjector(f Fault) *FaultInjector { return &FaultInjector{fault: f} }

// Fault returns the fault the injector fires.
func (fi *FaultInjector) Fault() Fault { return fi.fault }

// Fired reports whether the fault has fired.
func (fi *FaultInjector) Fired() bool { return fi.calls.Load() >= fi.fault.Call }

// next counts a call that rank starts and returns the fault to inject into it, or 0.
func (fi *FaultInjector) next(rank int) FaultKind {
	if fi == nil || rank != fi.fault.Rank {
		return 0
	}
	if fi.calls.Add(1) == fi.fault.Call {
		return fi.fault.Kind
	}
	return 0
}
