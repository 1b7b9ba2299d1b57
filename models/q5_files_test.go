package models

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// TestQ5TypesLoad: a GGUF whose matrices are Q5_0 and Q5_1, as llama-quantize writes
// Q4_K_M and Q5_K_M files for the matrices whose rows are not whole 256-value super-blocks,
// loads at TP 1, 2, 4 and 8, including TP 8's o_proj shards, which cut blocks: its step-0
// logits match, within 1e-3, those of the same model with every weight dequantized to f32
// on disk (the 32-value block types take 16-bit activations); TP 1 holds each matrix in the
// file's bytes (in groups of 16 rows) and the norms in f32; TP 8's notes name its cut
// shards; and every degree decodes the same greedy ids. Two files: the two types
// alternating, and a Q4_K_M-like mix on a 64-wide model with an FFN of two super-blocks
// (Q5_0 where rows are 64 wide, Q4_K for ffn_down, Q8_0 for the LM head), whose FFN splits
// in whole super-blocks.
func TestQ5TypesLoad(t *testing.T) {
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
		note  string
	}{
		{"alternating", 0, alternating, "blk.*.attn_output.weight: q5_1 shards of 8 columns cut its 32-value blocks"},
		{"q4_k_m-like", 512, q4KM, "blk.*.attn_output.weight: q5_0 shards of 8 columns cut its 32-value blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) { testQ5TypesLoad(t, tc.ffn, tc.types, tc.note) })
	}
}

func testQ5TypesLoad(t *testing.T, ffn int, types func(i int, name string) dtype.DType, tp8Note string) {
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
		if info := &tensors[k].Info; len(info.Shape) == 2 {
			info.DType = types(i, info.Name)
			i++
		}
	}
	dir := t.TempDir()
	quantPath, oraclePath := filepath.Join(dir, "q5.gguf"), filepath.Join(dir, "dequantized.gguf")
	require.NoError(t, WriteGGUF(quantPath, cfg, tensors))
	qsrc, qcfg, err := Open(quantPath)
	require.NoError(t, err)
	fileBytes := fileWeightBytes(qsrc)
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
				switch world {
				case 1:
					require.Equal(t, []int64{fileBytes}, m.WeightBytes())
				case 8:
					require.Contains(t, notes, tp8Note)
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

// TestQ5WeightDType: quantizing an f32 file on load to Q5_0 or Q5_1 gives the model that a
// file of that type, written from the same f32 weights, loads as: the same weight bytes and
// step-0 logits bit for bit, at TP 1 and 2.
func TestQ5WeightDType(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	dummy, err := NewDummy(cfg, 5)
	require.NoError(t, err)
	tensors, err := format.ReadAll(dummy, 0)
	require.NoError(t, err)
	dir := t.TempDir()
	f32Path := filepath.Join(dir, "f32.gguf")
	require.NoError(t, WriteGGUF(f32Path, cfg, tensors))
	prompt := []int32{1, 17, 42, 301, 5, 99}
	for _, typ := range []dtype.DType{dtype.Q5_0, dtype.Q5_1} {
		typed := slices.Clone(tensors)
		for k := range typed {
			if len(typed[k].Info.Shape) == 2 {
				typed[k].Info.DType = typ
			}
		}
		path := filepath.Join(dir, typ.String()+".gguf")
		require.NoError(t, WriteGGUF(path, cfg, typed))
		for _, world := range []int{1, 2} {
			var loaded [2]*Llama
			for k, load := range []struct {
				path string
				opt  LlamaOptions
			}{{path, LlamaOptions{MaxTokens: 64}}, {f32Path, LlamaOptions{MaxTokens: 64, WeightDType: typ}}} {
				src, c, err := Open(load.path)
				require.NoError(t, err)
				loaded[k] = newTestLlama(t, world, c, src, load.opt)
				require.NoError(t, src.Close())
			}
			require.Equal(t, loaded[0].WeightBytes(), loaded[1].WeightBytes(), "%v tp=%d", typ, world)
			var logits [2][]float32
			for k, m := range loaded {
				st := oneSequence(m, prompt, 0, 0)
				require.NoError(t, m.Forward(st))
				logits[k] = m.Logits(st)[0]
			}
			require.Equal(t, logits[0], logits[1], "%v tp=%d: step-0 logits, the file against quantized on load", typ, world)
		}
	}
}
