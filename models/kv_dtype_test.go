package models

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// TestKVDTypeTPEquivalence: with a bf16 or f16 KV cache every rank rounds its heads' K and V
// alike, so TP 2 and 8 give TP 1's logits (to the same 1e-4 as f32) and greedy tokens; and
// the rounding moves the logits only a little from the f32 cache's.
func TestKVDTypeTPEquivalence(t *testing.T) {
	cfg := tpPreset(t, "tiny")
	src, err := NewDummy(cfg, tpTestSeed)
	require.NoError(t, err)
	ids := tpPromptIDs(40, cfg.Vocab)
	run := func(t *testing.T, world int, kv dtype.DType) tpRun {
		opt := tpTestOptions
		opt.KVDType = kv
		return runPrompt(t, newTestLlama(t, world, cfg, src, opt), ids)
	}
	f32 := run(t, 1, dtype.F32)
	for _, kv := range []dtype.DType{dtype.BF16, dtype.F16} {
		t.Run(kv.String(), func(t *testing.T) {
			want := run(t, 1, kv)
			moved := requireLogitsClose(t, f32.logits, want.logits, 0.05, fmt.Sprintf("%v cache against f32", kv))
			require.Positive(t, moved, "the %v cache must round what it stores", kv)
			for _, world := range []int{2, 8} {
				got := run(t, world, kv)
				requireLogitsClose(t, want.logits, got.logits, 1e-4, fmt.Sprintf("%v cache at TP %d", kv, world))
				require.Equal(t, want.greedy, got.greedy, "%v cache at TP %d", kv, world)
			}
		})
	}
}
