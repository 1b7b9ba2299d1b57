package models_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
)

// tinyGGUF is llama.cpp's tiny oracle model, shared by the project's tests.
const tinyGGUF = "../../shared/testdata/llamacpp-tiny/tiny-f32.gguf"

func needTinyGGUF(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(tinyGGUF); err != nil {
		t.Skipf("shared test data absent (%v): %s is needed for this test", err, tinyGGUF)
	}
	return tinyGGUF
}

func TestConfigFromGGUFTiny(t *testing.T) {
	path := needTinyGGUF(t)
	cfg, err := models.ConfigFromGGUF(path)
	require.NoError(t, err)
	require.Equal(t, 256, cfg.Hidden)
	require.Equal(t, 4, cfg.Layers)
	require.Equal(t, 8, cfg.Heads)
	require.Equal(t, 4, cfg.KVHeads)
	require.Equal(t, 32, cfg.HeadDim)
	require.Equal(t, 768, cfg.Intermediate)
	require.Equal(t, 512, cfg.Vocab)
	require.Equal(t, 10000.0, cfg.RopeTheta)
	require.False(t, cfg.TiedEmbeddings)
	require.Equal(t, models.RopeAdjacentPairs, cfg.RopeLayout)
	require.Greater(t, cfg.RMSEps, 0.0)
	require.Greater(t, cfg.ContextLength, 0)
	require.NoError(t, cfg.Validate())
	t.Logf("tiny-f32.gguf: %+v", cfg)

	src, cfg2, err := models.OpenGGUF(path)
	require.NoError(t, err)
	defer src.Close()
	require.Equal(t, cfg, cfg2)
	require.NoError(t, cfg.CheckSource(src))
	for _, ti := range src.Tensors() {
		require.Equal(t, dtype.F32, ti.DType, ti.Name)
	}
	q, ok := src.Tensor("blk.0.attn_q.weight")
	require.True(t, ok)
	require.Equal(t, []int{256, 256}, q.Shape)
	k, ok := src.Tensor("blk.0.attn_k.weight")
	require.True(t, ok)
	require.Equal(t, []int{128, 256}, k.Shape)
	down, ok := src.Tensor("blk.3.ffn_down.weight")
	require.True(t, ok)
	require.Equal(t, []int{256, 768}, down.Shape)
	emb, ok := src.Tensor(models.TokenEmbd)
	require.True(t, ok)
	require.Equal(t, []int{512, 256}, emb.Shape)
}

func TestGGUFTinyShardReads(t *testing.T) {
	path := needTinyGGUF(t)
	src, _, err := models.Open(path)
	require.NoError(t, err)
	defer src.Close()
	for _, name := range []string{"blk.0.attn_q.weight", "blk.1.ffn_down.weight", models.OutputNorm} {
		info, ok := src.Tensor(name)
		require.True(t, ok)
		full, err := format.ReadTensor(src, name)
		require.NoError(t, err)
		rows, cols := info.Dims()
		requireShardReadsMatch(t, src, info, full, rows, cols)
	}
	// The norm weights of the oracle are 1 + 0.02·N(0,1): near one.
	norm, err := format.ReadTensor(src, models.OutputNorm)
	require.NoError(t, err)
	for _, v := range norm {
		require.InDelta(t, 1, v, 0.2)
	}
	require.Equal(t, "gguf "+path, src.String())
	require.Equal(t, filepath.Base(path), filepath.Base(src.Path()))
}

// TestConfigFromGGUFVocabFallback drops llama.vocab_size: the vocab then comes from the
// rows of token_embd.weight.
func TestConfigFromGGUFVocabFallback(t *testing.T) {
	_, valid := ggufFixture(t)
	patched := bytes.Replace(valid, []byte("llama.vocab_size"), []byte("llama.vocab_sizx"), 1)
	require.NotEqual(t, valid, patched)
	path := filepath.Join(t.TempDir(), "novocab.gguf")
	require.NoError(t, os.WriteFile(path, patched, 0o644))
	cfg, err := models.ConfigFromGGUF(path)
	require.NoError(t, err)
	require.Equal(t, 10, cfg.Vocab)
	require.Equal(t, "fx", cfg.Name)
}
