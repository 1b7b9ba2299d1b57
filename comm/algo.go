package comm

import (
	"fmt"
	"strings"
)

// Algo is an all-reduce algorithm.
type Algo uint8

// The all-reduce algorithms. Auto asks the selector; the others force one algorithm, each
// described once by its row of algoTable (registry.go), whose one line Doc returns.
const (
	Auto Algo = iota // pick by world size and message size from the selection table
	Ring
	OneShot
	TwoShot
	NVLS
	Lamport
	Tree
	TwoLevel
	Star
)

// Algos lists the real algorithms of a node of one host in a fixed order (reports and
// autotuning use it).
var Algos = algosWhere(func(s *algoSpec) bool { return s.needs != needHosts })

// HostAlgos lists the algorithms that only a node of several hosts runs.
var HostAlgos = algosWhere(func(s *algoSpec) bool { return s.needs == needHosts })

// String returns the name used on command lines, in tables and in JSON.
func (a Algo) String() string {
	if a == Auto {
		return "auto"
	}
	if s, ok := a.spec(); ok {
		return s.name
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
	return 0, fmt.Errorf("unknown all-reduce algorithm %q (want auto, %s)", s, AlgoNames(nil))
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
