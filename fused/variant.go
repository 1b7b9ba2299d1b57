package fused

import (
	"fmt"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
)

// Variant is how the all-reduce + residual + RMSNorm runs.
type Variant uint8

// The variants. Auto selects by size as the plain all-reduce does.
const (
	Auto    Variant = iota
	Unfused         // all-reduce (comm's choice), then a separate residual + RMSNorm kernel
	OneShot         // every rank reduces and normalizes every row
	TwoShot         // reduce-scatter by tokens (or hidden columns when tokens < n), norm in the gather
	NVLS            // switch reduction through the multicast object, norm on the way out
	Tree            // NCCL's double binary tree, norm on the way down
	// SeqParallel reduce-scatters by tokens, normalizes each rank's 1/n of the rows, then
	// all-gathers the normalized and residual rows (Megatron-SP; TensorRT-LLM, vLLM).
	SeqParallel
)

// Variants lists the real variants in a fixed order.
var Variants = []Variant{Unfused, OneShot, TwoShot, NVLS, Tree, SeqParallel}

// String names the variant as flags and reports do.
func (v Variant) String() string {
	switch v {
	case Auto:
		return "auto"
	case Unfused:
		return "unfused"
	case OneShot:
		return "oneshot"
	case TwoShot:
		return "twoshot"
	case NVLS:
		return "nvls"
	case Tree:
		return "tree"
	case SeqParallel:
		return "seqparallel"
	}
	return fmt.Sprintf("variant(%d)", uint8(v))
}

// ParseVariant reads a variant name.
func ParseVariant(s string) (Variant, error) {
	for _, v := range append([]Variant{Auto}, Variants...) {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown fused all-reduce variant %q (want auto, unfused, oneshot, twoshot, nvls, tree or seqparallel)", s)
}

// Select picks the variant Auto runs for a call of tokens rows of hidden f32 values: the
// table's choice when t (tuned for this hidden size, on the exact wire) has a row for the
// communicator's world size, else the fused form of the all-reduce the communicator would
// pick for the bytes the rows take on its wire (algorithms without a fused form,
// comm.Algo.Fused, run unfused; so do rows the fp8 wire cannot stage fused, rowsFitWire).
// Only a table picks SeqParallel: measured here it ties two-shot where the size rule runs
// two-shot, and on every GPU profile perf prices it above two-shot (it gathers the
// residual rows as well, over the link, to save a norm pass in HBM); at 1-256 tokens on
// this CPU backend a tuned table picks it, 1.02-1.3x faster per call, which a decode step
// here does not show (it waits on its peers' GEMMs); see docs/benchmarks/collectives.md,
// issue 15, "The fused selection table".
func Select(c *comm.Communicator, t *Table, tokens, hidden int) Variant {
	if !rowsFitWire(c, hidden) {
		return Unfused
	}
	if t != nil && t.Hidden == hidden && c.Wire() == comm.WireExact {
		if v, ok := t.Pick(c.Size(), int64(tokens)); ok {
			return v
		}
	}
	return variantOf(c.Pick(c.MessageBytes(tokens*hidden, dtype.F32)).Algo)
}

// variantOf is the fused form of all-reduce algorithm a, the variant of its name, where
// comm's registry says it has one (comm.Algo.Fused); Unfused otherwise.
func variantOf(a comm.Algo) Variant {
	if a.Fused() {
		for _, v := range Variants {
			if v.String() == a.String() {
				return v
			}
		}
	}
	return Unfused
}

// Resolve returns v, or Select's pick when v is Auto: the variant a call of tokens rows of
// hidden values runs.
func (v Variant) Resolve(c *comm.Communicator, t *Table, tokens, hidden int) Variant {
	if v != Auto {
		return v
	}
	return Select(c, t, tokens, hidden)
}

// algo is the all-reduce shape a fused variant follows, for comm's records and checks: the
// algorithm of its name it is the fused form of (variantOf), Auto for Auto and Unfused.
func (v Variant) algo() comm.Algo {
	if v == SeqParallel {
		return comm.OneShot // a direct reduce-scatter and all-gather
	}
	for _, a := range comm.Algos {
		if a.Fused() && a.String() == v.String() {
			return a
		}
	}
	return comm.Auto
}
