package models

import (
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/layers"
)

// columnLinear is one rank's shard of a column-parallel linear layer (Megatron's and vLLM's
// ColumnParallelLinear: Q, K, V, gate, up): output rows [r0, r1) of W, and of its bias
// where the architecture has one. Its outputs are the rank's own; no collective follows.
type columnLinear struct {
	w    layers.Matrix
	bias *device.Buffer // nil: no bias
}

// out is the layer as one output y of a launch of linears.
func (c columnLinear) out(y []float32) linearOut { return linearOut{y, c.w, c.bias} }

// rowLinear is one rank's shard of a row-parallel linear layer (RowParallelLinear: o_proj,
// down): input columns [c0, c1) of W, as whole blocks of a quantized type whose own
// columns begin at lead (see loadMatrix). Its outputs are partial sums that the fused
// all-reduce + residual + RMSNorm adds up; a bias would be added once, after it, so the
// architectures here have none.
type rowLinear struct {
	w    layers.Matrix
	lead int
}
