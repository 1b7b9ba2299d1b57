package comm

import (
	"fmt"
	"strings"
)

// Proto is a protocol, as NCCL keeps them: how a step's data and its "ready" signal travel
// between two ranks, orthogonal to the algorithm that decides which rank sends what. Ring
// and Tree run with any protocol; the other algorithms have their own synchronisation
// (one-shot's and two-shot's barriers are Simple, Lamport's sentinels are LL's idea
// applied to one-shot) and take none.
type Proto uint8

// The protocols, after ProtoAuto in NCCL's order (tuning.cc's LL, LL128, Simple).
const (
	ProtoAuto Proto = iota // pick by world size and message size (selection table or rule)
	// LL: every 8-byte word carries 4 bytes of data and a 4-byte flag, stored at once, so
	// the receiver polls the data itself: no fence, no separate flag, half the bandwidth.
	LL
	// LL128: every 128-byte line carries 120 bytes of data and an 8-byte flag written
	// after them (release) and read before them (acquire): 120/128 of the bandwidth.
	LL128
	// Simple: bulk copies, then a fence and a flag (tpslice's barriers): full bandwidth,
	// the most latency per step.
	Simple
)

// Protos lists the real protocols in NCCL's order (reports and autotuning use it).
var Protos = []Proto{LL, LL128, Simple}

// String returns the name NCCL_PROTO uses: "LL", "LL128", "Simple"; "auto" for ProtoAuto.
func (p Proto) String() string {
	switch p {
	case ProtoAuto:
		return "auto"
	case LL:
		return "LL"
	case LL128:
		return "LL128"
	case Simple:
		return "Simple"
	}
	return fmt.Sprintf("proto(%d)", uint8(p))
}

// ParseProto reads a protocol name as String writes it, in any case (NCCL_PROTO's
// spelling and lower case both work).
func ParseProto(s string) (Proto, error) {
	name := strings.TrimSpace(s)
	for _, p := range append([]Proto{ProtoAuto}, Protos...) {
		if strings.EqualFold(p.String(), name) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown protocol %q (want auto, LL, LL128 or Simple)", s)
}

// MarshalText writes the protocol's name, so tables read well as JSON.
func (p Proto) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a protocol's name.
func (p *Proto) UnmarshalText(b []byte) error {
	v, err := ParseProto(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// TakesProto reports whether algorithm a runs with a choice of protocol (ring and tree).
func TakesProto(a Algo) bool {
	s, ok := a.spec()
	return ok && s.takesProto()
}

// protoAlgoNames names the algorithms that take a protocol, "ring and tree", for errors.
func protoAlgoNames() string { return nameList(algosWhere((*algoSpec).takesProto), "and") }

// Choice is an algorithm and the protocol it runs with: what NCCL's tuner picks, and what a
// selection table row holds. Proto is ProtoAuto where the algorithm takes none or the
// selector decides.
type Choice struct {
	Algo  Algo
	Proto Proto
}

// String writes "ring/LL" or "ring/Simple"; with ProtoAuto, or for an algorithm that
// takes no protocol, the algorithm's name alone. Calls record Simple as ProtoAuto (it is
// the default), so records and errors name "ring" for the ring under Simple.
func (c Choice) String() string {
	if c.Proto == ProtoAuto || !TakesProto(c.Algo) {
		return c.Algo.String()
	}
	return c.Algo.String() + "/" + c.Proto.String()
}

// Choices lists every algorithm with every protocol it takes, in Algos then Protos order:
// ring/LL, ring/LL128, ring/Simple, oneshot, … (what autotuning measures).
func Choices(algos []Algo) []Choice {
	var out []Choice
	for _, a := range algos {
		if !TakesProto(a) {
			out = append(out, Choice{Algo: a})
			continue
		}
		for _, p := range Protos {
			out = append(out, Choice{Algo: a, Proto: p})
		}
	}
	return out
}
