package models

import (
	"fmt"
	"math"

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models/format"
)

// RopeScaling is a frequency-dependent RoPE scaling as Hugging Face's config.json gives it
// (rope_scaling); the zero value is none.
type RopeScaling struct {
	// Type is "llama3" (Llama 3.1's: rope_type llama3), or "" for none.
	Type string
	// Factor divides the low frequencies; LowFreqFactor and HighFreqFactor bound the band
	// between them, in wavelengths relative to OriginalContext (Llama 3.1: 8, 1, 4, 8192).
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalContext                       int
}

// validate checks the scaling's fields.
func (s RopeScaling) validate() error {
	switch {
	case s == RopeScaling{}:
		return nil
	case s.Type != "llama3":
		return fmt.Errorf("rope scaling type %q is not supported (only \"llama3\")", s.Type)
	case !(s.Factor > 0) || !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) || s.OriginalContext <= 0 ||
		math.IsInf(s.Factor, 0) || math.IsInf(s.HighFreqFactor, 0):
		return fmt.Errorf("llama3 rope scaling %+v: want factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0", s)
	}
	return nil
}

// divisor is what frequency invFreq is divided by under Llama 3.1's scaling, as
// transformers' _compute_llama3_parameters and llama.cpp's converter (rope_freqs) compute
// it: 1 for wavelengths below OriginalContext/HighFreqFactor, Factor above
// OriginalContext/LowFreqFactor, and between them 1 / ((1-smooth)/Factor + smooth) with
// smooth = (OriginalContext/wavelength - LowFreqFactor) / (HighFreqFactor - LowFreqFactor).
func (s RopeScaling) divisor(invFreq float64) float64 {
	wavelen := 2 * math.Pi / invFreq
	orig := float64(s.OriginalContext)
	switch {
	case wavelen < orig/s.HighFreqFactor:
		return 1
	case wavelen > orig/s.LowFreqFactor:
		return s.Factor
	}
	smooth := (orig/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
	return 1 / ((1-smooth)/s.Factor + smooth)
}

// newRope builds the model's RoPE table: base RopeTheta, each frequency divided by its
// factor (as llama.cpp's ggml_rope_ext applies freq_factors):
//
//	invFreq[j] = RopeTheta^(-2j/HeadDim) / factor[j]
//
// with the factors of the source's rope_freqs.weight where it holds one (a GGUF file of
// Llama 3.1), else those Config.RopeScaling computes, else 1.
func newRope(cfg Config, src format.Source) (*layers.RopeTable, error) {
	if cfg.HeadDim <= 0 || cfg.HeadDim%2 != 0 {
		return layers.NewRopeTable(cfg.HeadDim, cfg.ContextLength, cfg.RopeTheta) // its error
	}
	half := cfg.HeadDim / 2
	inv := make([]float64, half)
	for j := range inv {
		inv[j] = math.Pow(cfg.RopeTheta, -float64(2*j)/float64(cfg.HeadDim))
	}
	info, stored := src.Tensor(RopeFreqs)
	switch {
	case stored:
		if len(info.Shape) != 1 || info.Shape[0] != half {
			return nil, fmt.Errorf("%v: %s has shape %v, want [%d] (head dim %d / 2)", src, RopeFreqs, info.Shape, half, cfg.HeadDim)
		}
		factors, err := format.ReadTensor(src, RopeFreqs)
		if err != nil {
			return nil, err
		}
		for j, f := range factors {
			if !(f > 0) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("%v: %s: factor %d is %v, want positive and finite", src, RopeFreqs, j, f)
			}
			inv[j] /= float64(f)
		}
	case cfg.RopeScaling.Type != "":
		for j := range inv {
			inv[j] /= cfg.RopeScaling.divisor(inv[j])
		}
	}
	return layers.NewRopeTableFreqs(cfg.ContextLength, inv)
}
