package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
)

// TestExportedPresetRunsAsThePreset writes the tiny preset as bench/peergguf does for
// llama.cpp (models.ExportGGUF with its synthetic vocabulary) and requires the file to run
// as the preset: the same prompt ids (the vocabulary came through) and the same greedy ids
// and log-probabilities to rounding (Q and K rows moved to the GGUF layout, every other
// tensor as it was).
func TestExportedPresetRunsAsThePreset(t *testing.T) {
	cfg, err := models.Preset("tiny")
	require.NoError(t, err)
	src, err := models.NewDummy(cfg, 3)
	require.NoError(t, err)
	tok, err := LoadTokenizer("tiny")
	require.NoError(t, err)
	meta, err := tok.GGUFMetadata()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, models.ExportGGUF(path, cfg, src, dtype.F32, meta...))

	generate := func(model string) Result {
		e, err := New(Config{Model: model, Seed: 3, TP: 2})
		require.NoError(t, err)
		defer func() { _ = e.Close() }()
		res, err := e.Generate(context.Background(), Request{Prompt: "Hello my name is", MaxTokens: 12, IgnoreEOS: true, Logprobs: true}, func(Token) error { return nil })
		require.NoError(t, err)
		return res
	}
	want, got := generate("tiny"), generate(path)
	require.Equal(t, want.PromptIDs, got.PromptIDs)
	require.Equal(t, want.OutputIDs, got.OutputIDs)
	for i := range want.Logprobs { // f32 rounding of the permuted RoPE order: <= 1e-7 here
		require.InDelta(t, want.Logprobs[i].Logprob, got.Logprobs[i].Logprob, 1e-6, "token %d: the same logits, not only the same argmax", i)
	}
	require.Len(t, got.OutputIDs, 12)
}
