package perf

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
)

// gpt-fast's published Llama-2-7B decode on 8×A100-80GB (330 W), bf16, batch 1: tokens/s
// at TP 1, 2, 4 and 8 (pytorch-labs/gpt-fast README, tensor parallelism table).
var gptFastLlama2_7B = []struct {
	tp        int
	tokensSec float64
}{{1, 104.9}, {2, 168.8}, {4, 254.0}, {8, 328.4}}

// TestPredictsGPTFast prices gpt-fast's setup — bf16 weights, batch 1, CUDA graphs
// (torch.compile's reduce-overhead mode), NCCL all-reduces and a separate norm kernel — on
// the a100-sxm-80g profile, and must land within ±20% of its published tokens/s at every TP
// degree, with the same ordering.
func TestPredictsGPTFast(t *testing.T) {
	p, err := hw.Lookup("a100-sxm-80g")
	require.NoError(t, err)
	cfg, err := models.Preset("llama-2-7b")
	require.NoError(t, err)
	prev := 0.0
	for _, want := range gptFastLlama2_7B {
		pred, err := Predict(Config{Profile: p, Model: cfg, TP: want.tp, Batch: 1, Context: 100,
			Fused: fused.Unfused, Collectives: NCCL})
		require.NoError(t, err)
		ratio := pred.TokensPerSec / want.tokensSec
		t.Logf("TP %d: predicted %.1f tokens/s, gpt-fast %.1f (%.2fx); step %v, comm share %.2f, %d kernels, by class %v",
			want.tp, pred.TokensPerSec, want.tokensSec, ratio, pred.Step, pred.CommShare, pred.Kernels, pred.ByClass)
		require.InDelta(t, 1, ratio, 0.20, "TP %d", want.tp)
		require.Greater(t, pred.TokensPerSec, prev, "TP %d must be faster than the TP before it, as gpt-fast's", want.tp)
		prev = pred.TokensPerSec
	}
}
