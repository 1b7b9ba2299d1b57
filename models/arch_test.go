package models

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// TestArchitecturesMatchLlamaCpp: the Llama 3.1 (RoPE frequency factors), Qwen2 (QKV
// biases, NEOX RoPE) and Qwen3 (per-head q/k RMSNorm) files of ../shared/testdata/arch give
// step-0 logits within 1e-4 of both llama.cpp's and the float64 oracle's at TP 1, 2, 4 and
// 8, llama.cpp's greedy ids while its margins stay above 1e-3, and the same ids at every
// TP degree.
func TestArchitecturesMatchLlamaCpp(t *testing.T) {
	for _, name := range []string{"llama3-tiny-f32", "qwen2-tiny-f32", "qwen3-tiny-f32"} {
		t.Run(name, func(t *testing.T) {
			base := filepath.Join("../../shared/testdata/arch", name)
			requireShared(t, base+".gguf")
			run := readLlamaCppLog(t, base+".p1.log")
			refs := map[string][]float64{"llama.cpp": readStep0(t, base+".p1.step0.txt"), "the float64 oracle": readStep0(t, base+".p1.numpy64.txt")}
			var ids [][]int32
			for _, world := range []int{1, 2, 4, 8} {
				src, cfg, err := Open(base + ".gguf")
				require.NoError(t, err)
				m := newTestLlama(t, world, cfg, src, LlamaOptions{MaxTokens: 64})
				require.NoError(t, src.Close())
				st := oneSequence(m, run.prompt, 0, 0)
				require.NoError(t, m.Forward(st))
				got := m.Logits(st)[0]
				for ref, want := range refs {
					worst := maxAbsDiff(want, got)
					require.Less(t, worst, 1e-4, "tp=%d: largest step-0 logit difference from %s", world, ref)
					t.Logf("tp=%d: step-0 logits within %.2g of %s", world, worst, ref)
				}
				ids = append(ids, greedy(t, m, run.prompt, len(run.greedy)))
			}
			n := run.trusted(1e-3)
			require.Equal(t, run.greedy[:n], ids[0][:n], "greedy ids while llama.cpp's margin stays above 1e-3 (%d steps)", n)
			for i, world := range []int{2, 4, 8} {
				require.Equal(t, ids[0], ids[i+1], fmt.Sprintf("greedy ids at TP %d against TP 1", world))
			}
		})
	}
}

// TestLlama3WithoutFrequencyFactorsFails: the logits test above sees the frequency
// factors: the Llama 3.1 file read without its rope_freqs.weight misses the oracle by more
// than 1e-4.
func TestLlama3WithoutFrequencyFactorsFails(t *testing.T) {
	base := "../../shared/testdata/arch/llama3-tiny-f32"
	requireShared(t, base+".gguf")
	run := readLlamaCppLog(t, base+".p1.log")
	oracle := readStep0(t, base+".p1.numpy64.txt")
	src, cfg, err := Open(base + ".gguf")
	require.NoError(t, err)
	defer src.Close()
	_, ok := src.Tensor(RopeFreqs)
	require.True(t, ok, "the file holds %s", RopeFreqs)
	m := newTestLlama(t, 1, cfg, hidingSource{src, RopeFreqs}, LlamaOptions{MaxTokens: 64})
	st := oneSequence(m, run.prompt, 0, 0)
	require.NoError(t, m.Forward(st))
	worst := maxAbsDiff(oracle, m.Logits(st)[0])
	t.Logf("without the factors: step-0 logits %.2g from the oracle", worst)
	require.Greater(t, worst, 1e-4)
}

// TestArchConfigs: the architectures' GGUF metadata become their configs' traits, and an
// unknown architecture is refused with the supported ones.
func TestArchConfigs(t *testing.T) {
	for _, tc := range []struct {
		name           string
		arch           string
		bias, norm     bool
		layout         RopeLayout
		theta, factors bool
	}{
		{"llama3-tiny-f32", "", false, false, RopeAdjacentPairs, true, true},
		{"qwen2-tiny-f32", "qwen2", true, false, RopeHalfSplit, false, false},
		{"qwen3-tiny-f32", "qwen3", false, true, RopeHalfSplit, false, false},
	} {
		path := filepath.Join("../../shared/testdata/arch", tc.name+".gguf")
		requireShared(t, path)
		cfg, err := ConfigFromGGUF(path)
		require.NoError(t, err)
		require.Equal(t, tc.arch, cfg.Arch, tc.name)
		require.Equal(t, tc.bias, cfg.QKVBias, tc.name)
		require.Equal(t, tc.norm, cfg.QKNorm, tc.name)
		require.Equal(t, tc.layout, cfg.RopeLayout, tc.name)
		if tc.theta {
			require.Equal(t, 500000.0, cfg.RopeTheta, tc.name)
		}
	}
	_, err := LookupArch("gpt2")
	require.ErrorContains(t, err, `architecture "gpt2" is not supported (supported: "llama", "qwen2", "qwen3")`)
	bad := tpPreset(t, "tiny")
	bad.Arch = "mamba"
	require.ErrorContains(t, bad.Validate(), `Arch must be one of "llama", "qwen2", "qwen3", got mamba`)
}

// hidingSource is a Source without one of its tensors.
type hidingSource struct {
	format.Source
	hidden string
}

func (s hidingSource) Tensor(name string) (format.TensorInfo, bool) {
	if name == s.hidden {
		return format.TensorInfo{}, false
	}
	return s.Source.Tensor(name)
}

func (s hidingSource) Tensors() []format.TensorInfo {
	return slices.DeleteFunc(s.Source.Tensors(), func(t format.TensorInfo) bool { return t.Name == s.hidden })
}

// maxAbsDiff is the largest |want[i] - got[i]|; the lengths must match.
func maxAbsDiff(want []float64, got []float32) float64 {
	if len(want) != len(got) {
		return float64(len(got) - len(want))
	}
	worst := 0.0
	for i := range want {
		worst = max(worst, abs64(want[i]-float64(got[i])))
	}
	return worst
}

// TestArchitecturesAsHF: the arch files written as Hugging Face checkpoints (safetensors
// under HF names, Q and K in HF's half-split layout, config.json of their class; Llama
// 3.1's frequency factors as its rope_scaling instead of rope_freqs.weight) give the
// GGUF files' step-0 logits within 1e-4 and the same greedy ids, at TP 1 and 4.
func TestArchitecturesAsHF(t *testing.T) {
	for _, name := range []string{"llama3-tiny-f32", "qwen2-tiny-f32", "qwen3-tiny-f32"} {
		t.Run(name, func(t *testing.T) {
			base := filepath.Join("../../shared/testdata/arch", name)
			requireShared(t, base+".gguf")
			run := readLlamaCppLog(t, base+".p1.log")
			gg, cfg := openChecked(t, base+".gguf")
			ts, err := format.ReadAll(gg, dtype.F32)
			require.NoError(t, err)
			hfCfg := cfg
			hfCfg.RopeLayout = RopeHalfSplit
			if _, ok := gg.Tensor(RopeFreqs); ok { // the factors rope_scaling gives (this file's README)
				hfCfg.RopeScaling = RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}
				ts = slices.DeleteFunc(ts, func(tn format.Tensor) bool { return tn.Info.Name == RopeFreqs })
			}
			dir := t.TempDir()
			writeHFCheckpoint(t, dir, hfCfg, withQKLayout(t, cfg, ts, cfg.RopeLayout, RopeHalfSplit))
			hf, gotCfg := openChecked(t, dir)
			gotCfg.Name = hfCfg.Name
			require.Equal(t, hfCfg, gotCfg, "config.json read back")
			for _, world := range []int{1, 4} {
				ggModel := newTestLlama(t, world, cfg, gg, LlamaOptions{MaxTokens: 64})
				hfModel := newTestLlama(t, world, gotCfg, hf, LlamaOptions{MaxTokens: 64})
				var logits [2][]float32
				for i, m := range []*Llama{ggModel, hfModel} {
					st := oneSequence(m, run.prompt, 0, 0)
					require.NoError(t, m.Forward(st))
					logits[i] = m.Logits(st)[0]
				}
				d := requireLogitsClose(t, logits[0], logits[1], 1e-4, fmt.Sprintf("tp=%d: safetensors vs GGUF", world))
				t.Logf("tp=%d: step-0 logits of the HF checkpoint within %.2g of the GGUF file's", world, d)
				require.Equal(t, greedy(t, ggModel, run.prompt, 16), greedy(t, hfModel, run.prompt, 16), "tp=%d: greedy ids", world)
			}
		})
	}
}

// TestArchitecturesQuantized: each arch file quantized on load to Q8_0 and to Q4_K (their
// biases and norms stay f32) runs at TP 1, 2, 4 and 8 (TP 8 cuts o_proj's 256-value Q4_K blocks)
// with the same greedy ids, its step-0 logits near the float64
// oracle of the f32 weights (Q8_0 within 0.05, Q4_K within 0.4 on these 0.02-scale random
// weights: their rounding, measured 0.017-0.022 and 0.20-0.25).
func TestArchitecturesQuantized(t *testing.T) {
	for _, name := range []string{"llama3-tiny-f32", "qwen2-tiny-f32", "qwen3-tiny-f32"} {
		for _, tc := range []struct {
			dt  dtype.DType
			tol float64
		}{{dtype.Q8_0, 0.05}, {dtype.Q4_K, 0.4}} {
			t.Run(fmt.Sprintf("%s/%v", name, tc.dt), func(t *testing.T) {
				base := filepath.Join("../../shared/testdata/arch", name)
				requireShared(t, base+".gguf")
				run := readLlamaCppLog(t, base+".p1.log")
				oracle := readStep0(t, base+".p1.numpy64.txt")
				src, cfg := openChecked(t, base+".gguf")
				var ids [][]int32
				worlds := []int{1, 2, 4, 8}
				for _, world := range worlds {
					m := newTestLlama(t, world, cfg, src, LlamaOptions{MaxTokens: 64, WeightDType: tc.dt})
					st := oneSequence(m, run.prompt, 0, 0)
					require.NoError(t, m.Forward(st))
					worst := maxAbsDiff(oracle, m.Logits(st)[0])
					require.Less(t, worst, tc.tol, "tp=%d: step-0 logits vs the oracle", world)
					t.Logf("tp=%d: step-0 logits within %.2g of the f32 oracle", world, worst)
					ids = append(ids, greedy(t, m, run.prompt, 8))
				}
				for i := 1; i < len(worlds); i++ {
					require.Equal(t, ids[0], ids[i], "greedy ids at TP %d against TP 1", worlds[i])
				}
			})
		}
	}
}
