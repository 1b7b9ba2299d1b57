package main

import (
	"flag"
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/fused"
)

// wireUsage is the help of --allreduce-dtype, which generate, bench, serve,
// allreduce-bench and plan share.
const wireUsage = "the all-reduces' wire: exact (default: bitwise the activations' dtype), bf16 (f32 rounded to bf16) or fp8 (e4m3, one f32 scale per 32 values); one-shot and two-shot only"

// wireFlag is --allreduce-dtype into *w.
type wireFlag struct{ w *comm.Wire }

func (f wireFlag) String() string {
	if f.w == nil {
		return comm.WireExact.String()
	}
	return f.w.String()
}

func (f wireFlag) Set(s string) error {
	w, err := comm.ParseWire(s)
	if err == nil {
		*f.w = w
	}
	return err
}

// addWireFlag registers --allreduce-dtype on fs.
func addWireFlag(fs *flag.FlagSet, w *comm.Wire) { fs.Var(wireFlag{w}, "allreduce-dtype", wireUsage) }

// checkWire rejects, before anything loads, an --algo or --fused that cannot run the wire.
func checkWire(w comm.Wire, algo comm.Algo, v fused.Variant) error {
	switch {
	case !w.Supports(algo):
		return fmt.Errorf("--allreduce-dtype %v: --algo %v does not run it (oneshot, twoshot and auto do)", w, algo)
	case w != comm.WireExact && (v == fused.NVLS || v == fused.Tree):
		return fmt.Errorf("--allreduce-dtype %v: --fused %v does not run it (oneshot, twoshot, unfused and auto do)", w, v)
	}
	return nil
}
