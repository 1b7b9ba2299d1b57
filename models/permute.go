package models

import "fmt"

// PermuteQKToAdjacent reorders the rows of a Q or K projection from Hugging Face's
// half-split RoPE layout to llama.cpp's adjacent-pairs layout, as convert_hf_to_gguf does:
// w is row-major [heads·headDim, cols], and within each head row t·headDim/2 + j moves to
// row 2j + t (t ∈ {0, 1}, j < headDim/2). For K, heads is the number of KV heads. It returns
// a new slice; w is not changed.
func PermuteQKToAdjacent[T any](w []T, heads, headDim, cols int) ([]T, error) {
	return permuteQK(w, heads, headDim, cols, true)
}

// PermuteQKToHalfSplit is the inverse of PermuteQKToAdjacent: within each head, row 2j + t
// of the adjacent-pairs layout moves to row t·headDim/2 + j of the half-split layout.
func PermuteQKToHalfSplit[T any](w []T, heads, headDim, cols int) ([]T, error) {
	return permuteQK(w, heads, headDim, cols, false)
}

func permuteQK[T any](w []T, heads, headDim, cols int, toAdjacent bool) ([]T, error) {
	if heads <= 0 || headDim <= 0 || headDim%2 != 0 || cols < 0 {
		return nil, fmt.Errorf("models: permute Q/K: heads %d, head dim %d, cols %d: want positive heads and a positive even head dim", heads, headDim, cols)
	}
	if len(w) != heads*headDim*cols {
		return nil, fmt.Errorf("models: permute Q/K: %d elements, want heads %d × head dim %d × cols %d = %d", len(w), heads, headDim, cols, heads*headDim*cols)
	}
	out := make([]T, len(w))
	half := headDim / 2
	for h := range heads {
		base := h * headDim
		for j := range half {
			for t := range 2 {
				adj, split := base+2*j+t, base+t*half+j
				dst, src := adj, split
				if !toAdjacent {
					dst, src = split, adj
				}
				copy(out[dst*cols:(dst+1)*cols], w[src*cols:(src+1)*cols])
			}
		}
	}
	return out, nil
}
