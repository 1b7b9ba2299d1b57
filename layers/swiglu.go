package layers

import "fmt"

// SwiGLU computes the gated activation of a Llama MLP element-wise, with expf the
// package's f32 e^x:
//
//	for i := range out { out[i] = gate[i] / (1 + expf(-gate[i])) * up[i] }
//
// (silu(gate)·up, the quotient rounded to f32 before the product). out may be gate or up;
// otherwise they must not overlap. It does not allocate.
func SwiGLU(out, gate, up []float32) error {
	if len(gate) != len(out) || len(up) != len(out) {
		return fmt.Errorf("layers: swiglu: len(out)=%d, len(gate)=%d, len(up)=%d: want equal", len(out), len(gate), len(up))
	}
	swiglu(out, gate, up)
	return nil
}

// SwiGLUMerged is SwiGLU on the output of a merged gate/up projection (vLLM's
// MergedColumnParallelLinear): gateUp is [tokens, 2·inter] with each row's gate half first,
// out is [tokens, inter]:
//
//	for t, i: out[t][i] = silu(gateUp[t][i]) * gateUp[t][inter+i]
func SwiGLUMerged(out, gateUp []float32, inter int) error {
	if inter <= 0 || len(out)%inter != 0 || len(gateUp) != 2*len(out) {
		return fmt.Errorf("layers: swiglu merged: len(out)=%d, len(gateUp)=%d, inter=%d: want out [tokens, inter] and gateUp [tokens, 2·inter]", len(out), len(gateUp), inter)
	}
	for r := 0; r < len(out)/inter; r++ {
		row := gateUp[2*r*inter : 2*(r+1)*inter]
		swiglu(out[r*inter:(r+1)*inter], row[:inter], row[inter:])
	}
	return nil
}

// swigluGo is SwiGLU after validation, in portable Go; swiglu (reduce_amd64.go) runs the
// AVX2 kernel where the CPU has it, bitwise this loop.
func swigluGo(out, gate, up []float32) {
	gate, up = gate[:len(out)], up[:len(out)]
	for i, g := range gate {
		out[i] = silu(g) * up[i]
	}
}
