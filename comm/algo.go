package comm

import (
	"fmt"
	"strings"
)

// Algo is an all-reduce algorithm.
type Algo uint8

// The all-reduce algorithms. Auto asks the selector; the others force one algorithm.
const (
	Auto     Algo = iota // pick by world size and message size from the selection table
	Ring                 // reduce-scatter + all-gather around a ring, 2(n-1) steps (NCCL's shape)
	OneShot              // every rank reads all n inputs and sums them; best for small messages
	TwoShot              // reduce-scatter then all-gather through peer buffers; medium and large
	NVLS                 // switch-side reduction through a multicast object (emulated here)
	Lamport              // flag-free one-shot: −0.0 sentinels, triple-buffered (TensorRT-LLM)
	Tree                 // NCCL's double binary tree: reduce up two trees, broadcast down, pipelined
	TwoLevel             // hierarchical: reduce-scatter in each host, all-reduce across hosts, all-gather in each host
)

// Algos lists the real algorithms of a node of one host in a fixed order (reports and
// autotuning use it).
var Algos = []Algo{Ring, OneShot, TwoShot, NVLS, Lamport, Tree}

// HostAlgos lists the algorithms that only a node of several hosts runs.
var HostAlgos = []Algo{TwoLevel}

// String returns the name used on command lines, in tables and in JSON.
func (a Algo) String() string {
	switch a {
	case Auto:
		return "auto"
	case Ring:
		return "ring"
	case OneShot:
		return "oneshot"
	case TwoShot:
		return "twoshot"
	case NVLS:
		return "nvls"
	case Lamport:
		return "lamport"
	case Tree:
		return "tree"
	case TwoLevel:
		return "twolevel"
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// ParseAlgo reads an algorithm name as String writes it.
func ParseAlgo(s string) (Algo, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, a := range append(append([]Algo{Auto}, Algos...), HostAlgos...) {
		if a.String() == name {
			return a, nil
		}
	}
	return 0, fmt.Errorf("unknown all-reduce algorithm %q (want auto, ring, oneshot, twoshot, nvls, lamport, tree or twolevel)", s)
}

// MarshalText writes the algorithm's name, so tables read well as JSON.
func (a Algo) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an algorithm's name.
func (a *Algo) UnmarshalText(b []byte) error {
	v, err := ParseAlgo(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
