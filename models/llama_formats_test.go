package models

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/tp"
)

// Acceptance tests of the checkpoint formats under the TP Llama: the same weights written
// as a Hugging Face safetensors checkpoint and as GGUF compute the same model.

// qkHeadCount returns how many heads a Q or K tensor holds, or 0 for other tensors.
func qkHeadCount(cfg Config, name string) int {
	_, kind, ok := ParseLayerTensorName(name)
	switch {
	case ok && kind == AttnQ:
		return cfg.Heads
	case ok && kind == AttnK:
		return cfg.KVHeads
	}
	return 0
}

// withQKLayout returns tensors whose Q and K rows, stored for layout from, are permuted to
// layout to (a copy; ts is not changed).
func withQKLayout(t *testing.T, cfg Config, ts []format.Tensor, from, to RopeLayout) []format.Tensor {
	t.Helper()
	out := slices.Clone(ts)
	if from == to {
		return out
	}
	for i, tn := range out {
		h := qkHeadCount(cfg, tn.Info.Name)
		if h == 0 {
			continue
		}
		var err error
		if to == RopeAdjacentPairs {
			tn.Data, err = PermuteQKToAdjacent(tn.Data, h, cfg.HeadDim, cfg.Hidden)
		} else {
			tn.Data, err = PermuteQKToHalfSplit(tn.Data, h, cfg.HeadDim, cfg.Hidden)
		}
		require.NoError(t, err)
		out[i] = tn
	}
	return out
}

// writeHFCheckpoint writes ts (canonical names, Q and K in the half-split layout) into dir
// as model.safetensors under Hugging Face names, with config.json for cfg.
func writeHFCheckpoint(t *testing.T, dir string, cfg Config, ts []format.Tensor) {
	t.Helper()
	hf := make([]format.Tensor, len(ts))
	for i, tn := range ts {
		name, err := HFName(tn.Info.Name)
		require.NoError(t, err)
		tn.Info.Name = name
		hf[i] = tn
	}
	require.NoError(t, format.WriteSafetensors(filepath.Join(dir, format.SafetensorsFile), hf))
	require.NoError(t, WriteHFConfig(filepath.Join(dir, HFConfigFile), cfg))
}

// openChecked opens a checkpoint with Open and closes it when the test ends.
func openChecked(t *testing.T, path string) (*format.FileSource, Config) {
	t.Helper()
	src, cfg, err := Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = src.Close() })
	return src, cfg
}

// TestLlamaFormatsAgree: dummy tiny weights written as a Hugging Face checkpoint
// (safetensors with HF names, Q and K in the half-split layout, config.json) and as GGUF
// (Q and K in the adjacent-pairs layout) and opened with Open give the logits of the dummy
// model to 1e-4 relative to max(1, |logit|), and the same greedy tokens, at TP = 1 and 2.
// The dummy weights stand for a checkpoint in either layout (the presets say half-split):
// the one file is written as drawn, the other's Q and K are permuted. In bf16 the two files
// hold the same rounded values and agree with each other to 1e-4 (the dummy model rounds
// only the matrices, so it is compared loosely). Loading the GGUF file as if it were
// half-split must change the logits: the prompt has positions past 0, where RoPE rotates.
func TestLlamaFormatsAgree(t *testing.T) {
	tiny := tpPreset(t, "tiny")
	ids := tpPromptIDs(7, tiny.Vocab)
	for _, drawn := range []RopeLayout{RopeHalfSplit, RopeAdjacentPairs} {
		cfg := tiny
		cfg.RopeLayout = drawn
		dummy, err := NewDummy(cfg, tpTestSeed)
		require.NoError(t, err)
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			t.Run(fmt.Sprintf("drawn %v/%v", drawn, dt), func(t *testing.T) {
				ts, err := format.ReadAll(dummy, dt)
				require.NoError(t, err)
				dir := t.TempDir()
				hfDir := filepath.Join(dir, "hf")
				require.NoError(t, os.Mkdir(hfDir, 0o755))
				writeHFCheckpoint(t, hfDir, cfg, withQKLayout(t, cfg, ts, drawn, RopeHalfSplit))
				ggufPath := filepath.Join(dir, "tiny.gguf")
				require.NoError(t, WriteGGUF(ggufPath, cfg, withQKLayout(t, cfg, ts, drawn, RopeAdjacentPairs)))

				hfSrc, hfCfg := openChecked(t, hfDir)
				wantHF := tiny
				wantHF.RopeLayout = RopeHalfSplit
				require.Equal(t, wantHF, hfCfg, "config.json read by Open")
				onlyCfg, err := ConfigFromHF(hfDir)
				require.NoError(t, err)
				require.Equal(t, wantHF, onlyCfg, "ConfigFromHF")
				st, err := format.OpenSafetensors(filepath.Join(hfDir, format.SafetensorsFile), CanonicalName)
				require.NoError(t, err)
				require.Equal(t, hfSrc.Tensors(), st.Tensors(), "OpenSafetensors of the file, Open of the directory")
				require.NoError(t, st.Close())

				ggSrc, ggCfg := openChecked(t, ggufPath)
				wantGG := tiny
				wantGG.RopeLayout = RopeAdjacentPairs
				wantGG.RopeTheta, wantGG.RMSEps = float64(float32(tiny.RopeTheta)), float64(float32(tiny.RMSEps)) // GGUF stores float32
				require.Equal(t, wantGG, ggCfg, "GGUF metadata read by Open")
				for _, src := range []format.Source{hfSrc, ggSrc} {
					require.NoError(t, hfCfg.CheckSource(src))
					for _, info := range src.Tensors() {
						require.Equal(t, dt, info.DType, "%v: %s", src, info.Name)
					}
				}

				for _, world := range []int{1, 2} {
					t.Run(fmt.Sprintf("tp=%d", world), func(t *testing.T) {
						ref := newTestLlama(t, world, cfg, dummy, LlamaOptions{WeightDType: dt, MaxTokens: 128, KVBlocks: 8})
						want := runPrompt(t, ref, ids)
						hfModel := newTestLlama(t, world, hfCfg, hfSrc, tpTestOptions)
						hf := runPrompt(t, hfModel, ids)
						ggModel := newTestLlama(t, world, ggCfg, ggSrc, tpTestOptions)
						gg := runPrompt(t, ggModel, ids)

						d := requireLogitsClose(t, hf.logits, gg.logits, tpLogitTol, "GGUF vs safetensors")
						t.Logf("max |Δlogit| GGUF vs safetensors: %.3g", d)
						require.Equal(t, hf.greedy, gg.greedy, "greedy ids, GGUF vs safetensors")
						require.Equal(t, ref.WeightBytes(), hfModel.WeightBytes(), "weight bytes, safetensors")
						require.Equal(t, ref.WeightBytes(), ggModel.WeightBytes(), "weight bytes, GGUF")

						tol := tpLogitTol
						if dt != dtype.F32 {
							tol = 5e-2 // the files' norm weights are rounded too, the dummy model's are not
						}
						for _, c := range []struct {
							name string
							got  tpRun
						}{{"safetensors", hf}, {"GGUF", gg}} {
							d := requireLogitsClose(t, want.logits, c.got.logits, tol, c.name+" vs the dummy model")
							t.Logf("max |Δlogit| %s vs the dummy model: %.3g", c.name, d)
							if dt == dtype.F32 {
								require.Equal(t, want.greedy, c.got.greedy, "greedy ids, %s vs the dummy model", c.name)
							}
						}

						if world == 1 {
							wrong := ggCfg
							wrong.RopeLayout = RopeHalfSplit
							bad := runPrompt(t, newTestLlama(t, world, wrong, ggSrc, tpTestOptions), ids)
							d := 0.0
							for i := range hf.logits {
								d = max(d, math.Abs(float64(bad.logits[i]-hf.logits[i])))
							}
							t.Logf("max |Δlogit| with the GGUF file read as half-split: %.3g", d)
							require.Greater(t, d, 1e-3, "the RoPE layout must matter for a prompt with positions past 0")
						}
					})
				}
			})
		}
	}
}

// TestLlamaMissingOrMisshapenTensor: a checkpoint without blk.1.ffn_down.weight, or with a
// transposed blk.0.attn_k.weight, opens (its config comes from metadata) but fails
// CheckSource and NewLlama with an error naming the tensor.
func TestLlamaMissingOrMisshapenTensor(t *testing.T) {
	cfg := tpPreset(t, "tiny")
	dummy, err := NewDummy(cfg, tpTestSeed)
	require.NoError(t, err)
	all, err := format.ReadAll(dummy, dtype.F32)
	require.NoError(t, err)
	const missing, transposed = "blk.1.ffn_down.weight", "blk.0.attn_k.weight"
	without := slices.DeleteFunc(slices.Clone(all), func(tn format.Tensor) bool { return tn.Info.Name == missing })
	require.Len(t, without, len(all)-1)
	misshapen := slices.Clone(all)
	for i, tn := range misshapen {
		if tn.Info.Name == transposed {
			tn.Info.Shape = []int{tn.Info.Shape[1], tn.Info.Shape[0]}
			misshapen[i] = tn
		}
	}
	for _, tc := range []struct {
		name   string
		ts     []format.Tensor
		format string
		want   []string
	}{
		{"gguf without " + missing, without, "gguf", []string{missing, "missing"}},
		{"safetensors without " + missing, without, "safetensors", []string{missing, "missing"}},
		{"gguf with transposed " + transposed, misshapen, "gguf", []string{transposed, "shape [64 32], want [32 64]"}},
		{"safetensors with transposed " + transposed, misshapen, "safetensors", []string{transposed, "shape [64 32], want [32 64]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir()
			if tc.format == "gguf" {
				path = filepath.Join(path, "broken.gguf")
				require.NoError(t, WriteGGUF(path, cfg, tc.ts))
			} else {
				writeHFCheckpoint(t, path, cfg, tc.ts)
			}
			src, got := openChecked(t, path)
			require.Equal(t, cfg.Hidden, got.Hidden)

			err := got.CheckSource(src)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}

			g := tpTestGroup(t, 2)
			m, err := NewLlama(g, got, src, tpTestOptions)
			require.Error(t, err)
			require.Nil(t, m)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// tpTestGroup is a TP group of world ranks with 2 SMs each, closed when the test ends.
func tpTestGroup(t *testing.T, world int) *tp.Group {
	t.Helper()
	g, err := tp.NewGroup(tp.GroupConfig{World: world, SMs: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g
}
