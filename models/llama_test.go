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

	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/tp"
)

const tinyDir = "../../shared/testdata/llamacpp-tiny"

var (
	tinyPrompt = []int32{1, 259, 299, 328, 424, 338, 366, 348, 367, 324, 412, 362, 342}
	tinyGreedy = []int32{454, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 477, 454, 477}
)

func requireShared(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
	}
}

// readStep0 reads llama.cpp's logits file: one "id value" line per vocabulary id, after
// comment lines starting with #.
func readStep0(t *testing.T, path string) []float64 {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Fields(sc.Text())
		require.Len(t, fields, 2, "line %q", sc.Text())
		id, err := strconv.Atoi(fields[0])
		require.NoError(t, err)
		require.Equal(t, len(out), id)
		v, err := strconv.ParseFloat(fields[1], 64)
		require.NoError(t, err)
		out = append(out, v)
	}
	require.NoError(t, sc.Err())
	return out
}

func newTestLlama(t *testing.T, world int, cfg Config, src format.Source, opt LlamaOptions) *Llama {
	t.Helper()
	g, err := tp.NewGroup(tp.GroupConfig{World: world, SMs: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	m, err := NewLlama(g, cfg, src, opt)
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m
}

// oneSequence is a Step for tokens ids at positions from start on, of sequence 0 whose KV
// blocks are 0, 1, 2, …, sampling the last token.
func oneSequence(m *Llama, ids []int32, start, candidates int) Step {
	pos := make([]int32, len(ids))
	for i := range pos {
		pos[i] = int32(start + i)
	}
	table := make([]int32, m.opt.KVBlocks)
	for i := range table {
		table[i] = int32(i)
	}
	return Step{IDs: ids, Batch: layers.Batch{Pos: pos, Tables: [][]int32{table}, Seq: make([]int32, len(ids))},
		Sample: []int{len(ids) - 1}, Candidates: candidates}
}

// TestLlamaMatchesLlamaCpp: the step-0 logits of the tiny GGUF match llama.cpp's to 1e-4 at
// every TP degree, and greedy decoding continues with llama.cpp's 16 tokens.
func TestLlamaMatchesLlamaCpp(t *testing.T) {
	path := filepath.Join(tinyDir, "tiny-f32.gguf")
	requireShared(t, path)
	want := readStep0(t, filepath.Join(tinyDir, "tiny-f32.kvf32.step0.txt"))
	for _, world := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("tp=%d", world), func(t *testing.T) {
			src, cfg, err := Open(path)
			require.NoError(t, err)
			defer src.Close()
			m := newTestLlama(t, world, cfg, src, LlamaOptions{MaxTokens: 32})
			st := oneSequence(m, tinyPrompt, 0, 0)
			require.NoError(t, m.Forward(st))
			got := m.Logits(st)[0]
			require.Len(t, got, len(want))
			for id := range want {
				require.InDelta(t, want[id], float64(got[id]), 1e-4, "logit of id %d", id)
			}

			var out []int32
			pos := len(tinyPrompt)
			st = oneSequence(m, tinyPrompt, 0, 1)
			require.NoError(t, m.Forward(st))
			for range tinyGreedy {
				next := best(m.Candidates(st)[0])
				out = append(out, next)
				st = oneSequence(m, []int32{next}, pos, 1)
				pos++
				require.NoError(t, m.Forward(st))
			}
			require.Equal(t, tinyGreedy, out)
		})
	}
}

func best(cands []layers.Candidate) int32 {
	b := cands[0]
	for _, c := range cands[1:] {
		if c.Before(b) {
			b = c
		}
	}
	return b.ID
}
