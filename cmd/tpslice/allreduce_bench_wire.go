package main

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
)

// allreduce-bench with --allreduce-dtype: only the algorithms that run the wire, and the
// error against the exact wire instead of #wrong.

// wireAlgos keeps, of --algo, what runs o's wire: "all" keeps one-shot, two-shot and
// auto; naming another algorithm is an error.
func wireAlgos(algos []comm.Algo, o benchOptions) ([]comm.Algo, error) {
	var out []comm.Algo
	for _, a := range algos {
		switch {
		case o.wire.Supports(a):
			out = append(out, a)
		case o.algos != "all":
			return nil, fmt.Errorf("--algo %v does not run --allreduce-dtype %v (oneshot, twoshot and auto do)", a, o.wire)
		}
	}
	return out, nil
}

// wireUsageOf says in a few words what a wire moves.
func wireUsageOf(name string) string {
	if name == comm.WireFP8.String() {
		return "e4m3 codes and one f32 scale per 32 values, summed in f32"
	}
	return "f32 rounded to bf16, summed in f32"
}
