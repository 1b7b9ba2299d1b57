package models

import (
	"fmt"
	"math"

	"github.com/tpslice/tpslice/layers"
)

// newRope builds the model's RoPE table: base RopeTheta, with each frequency divided by
// its factor where the source holds Llama 3.1's rope_freqs.weight (as llama.cpp's
// ggml_rope_ext applies freq_factors):
//
//	invFreq[j] = RopeTheta^(-2j/HeadDim) / factor[j]
func newRope(cfg Config, src Source) (*layers.RopeTable, error) {
	info, ok := src.Tensor(RopeFreqs)
	if !ok || cfg.HeadDim <= 0 || cfg.HeadDim%2 != 0 {
		return layers.NewRopeTable(cfg.HeadDim, cfg.ContextLength, cfg.RopeTheta)
	}
	half := cfg.HeadDim / 2
	if len(info.Shape) != 1 || info.Shape[0] != half {
		return nil, fmt.Errorf("%v: %s has shape %v, want [%d] (head dim %d / 2)", src, RopeFreqs, info.Shape, half, cfg.HeadDim)
	}
	factors, err := ReadTensor(src, RopeFreqs)
	if err != nil {
		return nil, err
	}
	inv := make([]float64, half)
	for j, f := range factors {
		if !(f > 0) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("%v: %s: factor %d is %v, want positive and finite", src, RopeFreqs, j, f)
		}
		inv[j] = math.Pow(cfg.RopeTheta, -float64(2*j)/float64(cfg.HeadDim)) / float64(f)
	}
	return layers.NewRopeTableFreqs(cfg.ContextLength, inv)
}
