package models

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// TestArchitecturesBF16Dot: each arch file loaded as bf16 and run with BF16Dot (activations
// rounded to bf16, VDPBF16PS) at TP 1, 2 and 4 gives step-0 logits near the float64 oracle
// of the f32 weights, no farther than twice the default bf16 path's distance (f32
// activations against the same bf16 weights), logits that differ from that path's (the
// option takes effect), llama.cpp's greedy ids while its margins stay above 0.03, and the
// same ids at every TP degree.
func TestArchitecturesBF16Dot(t *testing.T) {
	for _, name := range []string{"llama3-tiny-f32", "qwen2-tiny-f32", "qwen3-tiny-f32"} {
		t.Run(name, func(t *testing.T) {
			base := filepath.Join("../../shared/testdata/arch", name)
			requireShared(t, base+".gguf")
			run := readLlamaCppLog(t, base+".p1.log")
			oracle := readStep0(t, base+".p1.numpy64.txt")
			src, cfg := openChecked(t, base+".gguf")
			plain := newTestLlama(t, 1, cfg, src, LlamaOptions{MaxTokens: 64, WeightDType: dtype.BF16})
			st := oneSequence(plain, run.prompt, 0, 0)
			require.NoError(t, plain.Forward(st))
			plainLogits := plain.Logits(st)[0]
			plainWorst := maxAbsDiff(oracle, plainLogits)
			var ids [][]int32
			worlds := []int{1, 2, 4}
			for _, world := range worlds {
				m := newTestLlama(t, world, cfg, src, LlamaOptions{MaxTokens: 64, WeightDType: dtype.BF16, BF16Dot: true})
				st := oneSequence(m, run.prompt, 0, 0)
				require.NoError(t, m.Forward(st))
				got := m.Logits(st)[0]
				worst := maxAbsDiff(oracle, got)
				moved := 0.0
				for i, v := range got {
					moved = math.Max(moved, math.Abs(float64(v-plainLogits[i])))
				}
				t.Logf("tp=%d: step-0 logits within %.3g of the f32 oracle (f32 activations: %.3g); %.3g from f32 activations", world, worst, plainWorst, moved)
				require.Less(t, worst, 2*plainWorst, "tp=%d: step-0 logits vs the oracle", world)
				require.Greater(t, moved, 0.0, "tp=%d: BF16Dot gave the logits of f32 activations", world)
				ids = append(ids, greedy(t, m, run.prompt, len(run.greedy)))
			}
			n := run.trusted(0.03)
			require.Equal(t, run.greedy[:n], ids[0][:n], "greedy ids while llama.cpp's margin stays above 0.03 (%d steps)", n)
			for i := 1; i < len(worlds); i++ {
				require.Equal(t, ids[0], ids[i], fmt.Sprintf("greedy ids at TP %d against TP 1", worlds[i]))
			}
		})
	}
}
