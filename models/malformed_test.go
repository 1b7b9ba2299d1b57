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

// ggufFixture writes a small GGUF and returns its path and bytes.
func ggufFixture(t testing.TB) (string, []byte) {
	t.Helper()
	cfg := models.Config{Name: "fx", Hidden: 8, Intermediate: 16, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 4,
		Vocab: 10, RopeTheta: 10000, RMSEps: 1e-5, ContextLength: 16, RopeLayout: models.RopeAdjacentPairs}
	d, err := models.NewDummy(cfg, 5)
	require.NoError(t, err)
	ts, err := format.ReadAll(d, dtype.F32)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "fx.gguf")
	require.NoError(t, models.WriteGGUF(path, cfg, ts))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, b
}

// TestGGUFConfigMalformed: metadata a Llama config cannot come from is named (the
// tensor table's own faults are format's tests).
func TestGGUFConfigMalformed(t *testing.T) {
	_, valid := ggufFixture(t)
	for _, tc := range []struct {
		name string
		file []byte
		want []string
	}{
		{"other architecture", bytes.Replace(valid, []byte("llama"), []byte("gemma"), 1), []string{"general.architecture", "gemma"}},
		{"missing key", bytes.Replace(valid, []byte("llama.embedding_length"), []byte("llama.embedding_lengtx"), 1), []string{"llama.embedding_length", "missing"}},
		{"missing eps", bytes.Replace(valid, []byte("layer_norm_rms_epsilon"), []byte("layer_norm_rms_epsilox"), 1), []string{"layer_norm_rms_epsilon", "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.gguf")
			require.NoError(t, os.WriteFile(path, tc.file, 0o644))
			src, _, err := models.OpenGGUF(path)
			require.Error(t, err)
			require.Nil(t, src)
			require.Contains(t, err.Error(), path)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := models.ConfigFromGGUF(filepath.Join(t.TempDir(), "absent.gguf"))
	require.ErrorContains(t, err, "absent.gguf")
}

func TestWriteGGUFChecksConfig(t *testing.T) {
	err := models.WriteGGUF(filepath.Join(t.TempDir(), "x"), models.Config{}, nil)
	require.ErrorContains(t, err, "Hidden")
}

// TestOpenRefusesOtherFiles: a file that is no checkpoint is refused as such, not blamed
// for a config.json it never had.
func TestOpenRefusesOtherFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(path, []byte("hello"), 0o644))
	_, _, err := models.Open(path)
	require.ErrorContains(t, err, path+": not a checkpoint")
	require.NotContains(t, err.Error(), "config.json")
}
