package models

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/tp"
)

// TestFileOnlyTypesLoad: a GGUF whose matrices are Q5_0 and Q5_1, as llama-quantize writes
// Q4_K_M and Q5_K_M files for the matrices whose rows are not whole 256-value super-blocks,
// loads at TP 1, 2, 4 and 8 with each tensor held as quant.ComputeType says (Q5_0 as Q8_0,
// Q5_1 as Q5_1x8, both the same values), including TP 8's o_proj shards, which cut blocks:
// its step-0 logits match, within 1e-3, those of the same model with every weight
// dequantized to f32 on disk (the Q8_0 and Q5_1x8 matrices take 16-bit activations); the load notes
// name each conversion; and every degree decodes the same greedy ids. Two files: the two
// types alternating, and a Q4_K_M-like mix on a 64-wide model with an FFN of two
// super-blocks (Q5_0 where rows are 64 wide, Q4_K for ffn_down, Q8_0 for the LM head), whose
// FFN splits in whole super-blocks.
func TestFileOnlyTypesLoad(t *testing.T) {
	alternating := func(i int, _ string) dtype.DType { return []dtype.DType{dtype.Q5_0, dtype.Q5_1}[i%2] }
	q4KM := func(_ int, name string) dtype.DType {
		switch {
		case strings.HasSuffix(name, FFNDown+".weight"):
			return dtype.Q4_K
		case name == Output:
			return dtype.Q8_0
		case strings.HasSuffix(name, AttnV+".weight"):
			return dtype.Q5_1
		}
		return dtype.Q5_0
	}
	for _, tc := range []struct {
		name  string
		ffn   int
		types func(i int, name string) dtype.DType
		notes []string
	}{
		{"alternating", 0, alternating, []string{"q5_0 in the file, held as q8_0 (the same values; +55% bytes)", "q5_1 in the file, held as q5_1x8 (the same values; +50% bytes)"}},
		{"q4_k_m-like", 512, q4KM, []string{"blk.*.attn_q.weight: q5_0 in the file, held as q8_0", "blk.*.attn_v.weight: q5_1 in the file, held as q5_1x8"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testFileOnlyTypesLoad(t, tc.ffn, tc.types, tc.notes) })
	}
}

func testFileOnlyTypesLoad(t *testing.T, ffn int, types func(i int, name string) dtype.DType, wantNotes []string) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	if ffn != 0 {
		cfg.Intermediate = ffn
	}
	dummy, err := NewDummy(cfg, 7)
	require.NoError(t, err)
	tensors, err := format.ReadAll(dummy, 0)
	require.NoError(t, err)
	i := 0
	for k := range tensors {
		if len(tensors[k].Info.Shape) == 2 {
			tensors[k].Info.DType = types(i, tensors[k].Info.Name)
			i++
		}
	}
	dir := t.TempDir()
	quantPath, oraclePath := filepath.Join(dir, "q5.gguf"), filepath.Join(dir, "dequantized.gguf")
	require.NoError(t, WriteGGUF(quantPath, cfg, tensors))
	qsrc, qcfg, err := Open(quantPath)
	require.NoError(t, err)
	dequantized, err := format.ReadAll(qsrc, dtype.F32)
	require.NoError(t, err)
	require.NoError(t, qsrc.Close())
	require.NoError(t, WriteGGUF(oraclePath, qcfg, dequantized))

	prompt := []int32{1, 17, 42, 301, 5, 99}
	var ids [][]int32
	for _, world := range []int{1, 2, 4, 8} {
		var logits [2][]float32
		for k, path := range []string{quantPath, oraclePath} {
			src, c, err := Open(path)
			require.NoError(t, err)
			m := newTestLlama(t, world, c, src, LlamaOptions{MaxTokens: 64})
			require.NoError(t, src.Close())
			st := oneSequence(m, prompt, 0, 0)
			require.NoError(t, m.Forward(st))
			logits[k] = m.Logits(st)[0]
			if k == 0 {
				notes := strings.Join(m.LoadNotes(), "\n")
				for _, want := range wantNotes {
					require.Contains(t, notes, want)
				}
				t.Logf("tp=%d: %s", world, notes)
				ids = append(ids, greedy(t, m, prompt, 8))
			}
		}
		worst := 0.0
		for id := range logits[0] {
			worst = max(worst, abs64(float64(logits[0][id])-float64(logits[1][id])))
		}
		require.Less(t, worst, 1e-3, "tp=%d: largest step-0 logit difference from the dequantized model", world)
	}
	for i, world := range []int{2, 4, 8} {
		require.Equal(t, ids[0], ids[i+1], "greedy ids at TP %d against TP 1", world)
	}
}

// TestFileOnlyWeightDType: no option asks for a type that only files hold.
func TestFileOnlyWeightDType(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	src, err := NewDummy(cfg, 1)
	require.NoError(t, err)
	g, err := tp.NewGroup(tp.GroupConfig{World: 1, SMs: 1})
	require.NoError(t, err)
	defer g.Close()
	_, err = NewLlama(g, cfg, src, LlamaOptions{WeightDType: dtype.Q5_0})
	require.ErrorContains(t, err, "weight dtype q5_0 is a type of files that no kernel takes")
}
