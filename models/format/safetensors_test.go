package format_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// llamaNames renames the two tensors of validSafetensors the tests look for as a model's
// Rename would (models.CanonicalName), and keeps the rest.
func llamaNames(stored string) (string, bool) {
	name, ok := map[string]string{"lm_head.weight": "output.weight", "model.norm.weight": "output_norm.weight"}[stored]
	return name, ok
}

// stBytes assembles a safetensors file from a header and a data section.
func stBytes(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// validSafetensors is a small, well-formed safetensors file (HF names, all three dtypes).
func validSafetensors(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.safetensors")
	require.NoError(t, format.WriteSafetensors(path, []format.Tensor{
		{Info: format.TensorInfo{Name: "model.layers.0.self_attn.q_proj.weight", Shape: []int{4, 3}, DType: dtype.BF16}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Info: format.TensorInfo{Name: "model.norm.weight", Shape: []int{3}, DType: dtype.F32}, Data: []float32{1, -1, 0.5}},
		{Info: format.TensorInfo{Name: "lm_head.weight", Shape: []int{2, 3}, DType: dtype.F16}, Data: []float32{-2, 0.25, 1, 3, 4, 5}},
	}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestSafetensorsMalformed(t *testing.T) {
	valid := validSafetensors(t)
	f32x4 := make([]byte, 16)
	for _, tc := range []struct {
		name string
		file []byte
		want []string // substrings of the error, besides the file name
	}{
		{"empty", nil, []string{"too short"}},
		{"short", []byte{1, 2, 3}, []string{"too short"}},
		{"header length past end", stBytes(`{}`, nil)[:9], []string{"header length 2 past end"}},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, 1<<63), []string{"past end"}},
		{"broken json", stBytes(`{"a": {"dtype": "F32",`, nil), []string{"header JSON"}},
		{"json array", stBytes(`[1, 2]`, nil), []string{"header JSON"}},
		{"entry not an object", stBytes(`{"w": 3}`, nil), []string{"tensor w"}},
		{"unsupported dtype", stBytes(`{"w": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}}`, f32x4), []string{"tensor w", "I64"}},
		{"missing offsets", stBytes(`{"w": {"dtype": "F32", "shape": [4]}}`, f32x4), []string{"tensor w", "data_offsets"}},
		{"one offset", stBytes(`{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0]}}`, f32x4), []string{"tensor w", "data_offsets"}},
		{"range past end", stBytes(`{"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}`, f32x4), []string{"tensor w", "past end of file"}},
		{"offsets past end", stBytes(`{"w": {"dtype": "F32", "shape": [4], "data_offsets": [1000, 1016]}}`, f32x4), []string{"tensor w", "past end of file"}},
		{"shape disagrees with bytes", stBytes(`{"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]}}`, f32x4), []string{"tensor w", "needs 24 bytes"}},
		{"dtype disagrees with bytes", stBytes(`{"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 16]}}`, f32x4), []string{"tensor w", "needs 8 bytes"}},
		{"reversed offsets", stBytes(`{"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}}`, f32x4), []string{"tensor w"}},
		{"negative dim", stBytes(`{"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}`, f32x4), []string{"tensor w", "shape"}},
		{"huge dims", stBytes(`{"w": {"dtype": "F32", "shape": [2147483647, 2147483647], "data_offsets": [0, 16]}}`, f32x4), []string{"tensor w"}},
		{"scalar", stBytes(`{"w": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}`, f32x4), []string{"tensor w", "dimensions"}},
		{"3-D", stBytes(`{"w": {"dtype": "F32", "shape": [2, 1, 2], "data_offsets": [0, 16]}}`, f32x4), []string{"tensor w", "dimensions"}},
		{"same renamed name twice", stBytes(`{"lm_head.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "output.weight": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}`, f32x4), []string{"output.weight", "twice"}},
		{"truncated data", valid[:len(valid)-5], []string{"tensor output_norm.weight (model.norm.weight in the file)", "past end of file"}},
		{"truncated header", valid[:20], []string{"past end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			require.NoError(t, os.WriteFile(path, tc.file, 0o644))
			src, err := format.OpenSafetensors(path, llamaNames)
			require.Error(t, err)
			t.Log(err)
			require.Nil(t, src)
			require.Contains(t, err.Error(), path)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestSafetensorsIndexMalformed(t *testing.T) {
	valid := validSafetensors(t)
	for _, tc := range []struct {
		name  string
		index string
		want  []string
	}{
		{"broken json", `{"weight_map": {`, []string{"index"}},
		{"empty weight map", `{"weight_map": {}}`, []string{"weight_map"}},
		{"missing file", `{"weight_map": {"model.norm.weight": "absent.safetensors"}}`, []string{"absent.safetensors"}},
		{"escaping path", `{"weight_map": {"model.norm.weight": "../a.safetensors"}}`, []string{"model.norm.weight", "local"}},
		{"absolute path", `{"weight_map": {"model.norm.weight": "/etc/a.safetensors"}}`, []string{"model.norm.weight", "local"}},
		{"tensor not in its file", `{"weight_map": {"model.norm.weight": "a.safetensors", "model.embed_tokens.weight": "a.safetensors"}}`, []string{"model.embed_tokens.weight", "a.safetensors", "does not hold"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.safetensors"), valid, 0o644))
			index := filepath.Join(dir, format.SafetensorsIndexFile)
			require.NoError(t, os.WriteFile(index, []byte(tc.index), 0o644))
			_, err := format.OpenSafetensors(dir, llamaNames)
			require.Error(t, err)
			require.Contains(t, err.Error(), index)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := format.OpenSafetensors(t.TempDir(), llamaNames)
	require.ErrorContains(t, err, format.SafetensorsFile)
	_, err = format.OpenSafetensors(filepath.Join(t.TempDir(), "absent"), llamaNames)
	require.Error(t, err)
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
		src, err := format.OpenSafetensors(path, llamaNames)
		if err != nil {
			require.Contains(t, err.Error(), path)
			return
		}
		defer src.Close()
		readEverything(t, src)
	})
}
