package models_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
)

// readEverything reads every tensor of src whole and in a corner region, in every dtype;
// on a source that opened, every read must succeed.
func readEverything(t *testing.T, src models.Source) {
	for _, info := range src.Tensors() {
		rows, cols := info.Dims()
		for _, dt := range allDTypes {
			for _, r := range []models.Region{info.All(), {Row0: rows / 2, Row1: rows, Col0: cols / 2, Col1: cols}} {
				var dst models.Dest
				if dt == dtype.F32 {
					dst = models.F32Dest(make([]float32, r.Len()))
				} else {
					dst = models.U16Dest(dt, make([]uint16, r.Len()))
				}
				require.NoError(t, src.Read(info.Name, r, dst))
			}
		}
	}
}

// FuzzOpenSafetensors opens truncated and corrupted safetensors files: every outcome is a
// source whose tensors all read, or an error naming the file; never a panic.
func FuzzOpenSafetensors(f *testing.F) {
	valid := validSafetensors(f)
	f.Add(valid)
	for _, n := range []int{0, 4, 8, 9, 20, 64, len(valid) / 2, len(valid) - 1} {
		f.Add(valid[:n])
	}
	hlen := int(binary.LittleEndian.Uint64(valid))
	for _, i := range []int{0, 7, 8, 12, 30, 8 + hlen/2, 8 + hlen - 2} {
		b := bytes.Clone(valid)
		b[i] ^= 0x5a
		f.Add(b)
	}
	f.Add(bytes.Replace(valid, []byte(`"BF16"`), []byte(`"BF32"`), 1))
	f.Add(bytes.Replace(valid, []byte(`[4,3]`), []byte(`[3,4]`), 1))
	f.Add(bytes.Replace(valid, []byte(`[4,3]`), []byte(`[9,9]`), 1))
	f.Add(bytes.Replace(valid, []byte(`"data_offsets":[0,`), []byte(`"data_offsets":[9,`), 1))
	f.Add(stBytes(`{"w": {"dtype": "F16", "shape": [2, 0], "data_offsets": [0, 0]}}`, nil))
	f.Add(stBytes(`{"__metadata__": {"a": "b"}}`, nil))

	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(t.TempDir(), "f.safetensors")
		require.NoError(t, os.WriteFile(path, file, 0o644))
		src, err := models.OpenSafetensors(path)
		if err != nil {
			require.Contains(t, err.Error(), path)
			return
		}
		defer src.Close()
		readEverything(t, src)
	})
}

// FuzzOpenGGUF does the same for GGUF files, through gguf-parser-go.
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
		readEverything(t, src)
	})
}
