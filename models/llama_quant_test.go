package models

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// llamaCppRun is what a NAME.p1.log of ../shared/testdata records of llama.cpp's run.
type llamaCppRun struct {
	prompt, greedy []int32
	margins        []float64
}

func readLlamaCppLog(t *testing.T, path string) llamaCppRun {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var run llamaCppRun
	ints := func(s string) []int32 {
		var out []int32
		for _, w := range strings.Fields(s) {
			v, err := strconv.Atoi(w)
			require.NoError(t, err)
			out = append(out, int32(v))
		}
		return out
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ": ")
		switch {
		case !ok:
		case strings.HasPrefix(key, "prompt_tokens("):
			run.prompt = ints(val)
		case strings.HasPrefix(key, "greedy_ids("):
			run.greedy = ints(val)
		case strings.HasPrefix(key, "margins("):
			for _, w := range strings.Fields(val) {
				v, err := strconv.ParseFloat(w, 64)
				require.NoError(t, err)
				run.margins = append(run.margins, v)
			}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, run.prompt, "%s: no prompt_tokens", path)
	require.Len(t, run.margins, len(run.greedy), "%s", path)
	return run
}

// trusted is how many of llama.cpp's greedy ids are above its activation-quantization noise:
// those before the first step whose margin is below minMargin.
func (r llamaCppRun) trusted(minMargin float64) int {
	for i, m := range r.margins {
		if m < minMargin {
			return i
		}
	}
	return len(r.margins)
}

// TestLlamaQuantizedMatchesOracle: for every block-quantized file of the shared test data
// (Q8_0, Q4_0, the Q4_K_M mix of Q4_K and Q6_K, Q6_K, and a tied Q8_0 embedding), at TP 1,
// 2, 4 and 8 (where the tiny model's 32-wide heads cut the K-quants' 256-value blocks):
// the step-0 logits match the float64 oracle over the dequantized weights within 1e-3 —
// the weights stay quantized, activations are quantized to 16-bit integers — and within
// 1e-5 with the weights dequantized to f32 on load (exact); the greedy ids equal
// llama.cpp's while its margins stay above 0.03 (the noise of its 8-bit activations), and
// every TP degree gives the same 32 ids.
func TestLlamaQuantizedMatchesOracle(t *testing.T) {
	files := []string{"quant/tiny-Q8_0", "quant/tiny-Q4_0", "quant/tiny-Q4_K_M", "quant/tiny-Q6_K", "arch/tied-tiny-Q8_0"}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			base := filepath.Join("../../shared/testdata", name)
			requireShared(t, base+".gguf")
			run := readLlamaCppLog(t, base+".p1.log")
			oracle := readStep0(t, base+".p1.numpy64.txt")
			var ids [][]int32
			for _, world := range []int{1, 2, 4, 8} {
				for _, tc := range []struct {
					dt  dtype.DType
					tol float64
				}{{0, 1e-3}, {dtype.F32, 1e-5}} {
					src, cfg, err := Open(base + ".gguf")
					require.NoError(t, err)
					m := newTestLlama(t, world, cfg, src, LlamaOptions{MaxTokens: 64, WeightDType: tc.dt})
					require.NoError(t, src.Close())
					st := oneSequence(m, run.prompt, 0, 0)
					require.NoError(t, m.Forward(st))
					got := m.Logits(st)[0]
					require.Len(t, got, len(oracle))
					worst := 0.0
					for id := range oracle {
						worst = max(worst, abs64(oracle[id]-float64(got[id])))
					}
					require.Less(t, worst, tc.tol, "tp=%d weights %v: largest step-0 logit difference from the float64 oracle", world, tc.dt)
					if tc.dt == 0 {
						t.Logf("tp=%d: step-0 logits within %.2g of the oracle; %q", world, worst, m.LoadNotes())
						ids = append(ids, greedy(t, m, run.prompt, len(run.greedy)))
					}
				}
			}
			n := run.trusted(0.03)
			require.Equal(t, run.greedy[:n], ids[0][:n], "greedy ids while llama.cpp's margin stays above 0.03 (%d steps)", n)
			for i, world := range []int{2, 4, 8} {
				require.Equal(t, ids[0], ids[i+1], fmt.Sprintf("greedy ids at TP %d against TP 1", world))
			}
		})
	}
}

// greedy decodes n tokens after prompt, one candidate per rank.
func greedy(t *testing.T, m *Llama, prompt []int32, n int) []int32 {
	t.Helper()
	st := oneSequence(m, prompt, 0, 1)
	require.NoError(t, m.Forward(st))
	var out []int32
	pos := len(prompt)
	for range n {
		next := best(m.Candidates(st)[0])
		out = append(out, next)
		st = oneSequence(m, []int32{next}, pos, 1)
		pos++
		require.NoError(t, m.Forward(st))
	}
	return out
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
