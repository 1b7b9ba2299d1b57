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

// FuzzOpenGGUF opens truncated and corrupted GGUF files, config and tensors, through
// gguf-parser-go: every outcome is a source whose tensors all read, or an error naming the
// file; never a panic.
func FuzzOpenGGUF(f *testing.F) {
	_, valid := ggufFixture(f)
	f.Add(valid)
	for _, n := range []int{0, 4, 8, 24, 100, 400, len(valid) / 2, len(valid) - 1} {
		f.Add(valid[:n])
	}
	for _, i := range []int{4, 8, 16, 30, 100, 300, 500, 700} {
		b := bytes.Clone(valid)
		b[i] ^= 0xff
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(t.TempDir(), "f.gguf")
		require.NoError(t, os.WriteFile(path, file, 0o644))
		src, _, err := models.OpenGGUF(path)
		if err != nil {
			require.Contains(t, err.Error(), path)
			return
		}
		defer src.Close()
		_, err = format.ReadAll(src, dtype.F32) // every tensor of a source that opened reads
		require.NoError(t, err)
	})
}
