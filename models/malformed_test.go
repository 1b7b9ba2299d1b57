package models_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
)

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
	require.NoError(t, models.WriteSafetensors(path, []models.Tensor{
		{Info: models.TensorInfo{Name: "model.layers.0.self_attn.q_proj.weight", Shape: []int{4, 3}, DType: dtype.BF16}, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{Info: models.TensorInfo{Name: "model.norm.weight", Shape: []int{3}, DType: dtype.F32}, Data: []float32{1, -1, 0.5}},
		{Info: models.TensorInfo{Name: "lm_head.weight", Shape: []int{2, 3}, DType: dtype.F16}, Data: []float32{-2, 0.25, 1, 3, 4, 5}},
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
		{"same canonical name twice", stBytes(`{"lm_head.weight": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "output.weight": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}`, f32x4), []string{"output.weight", "twice"}},
		{"truncated data", valid[:len(valid)-5], []string{"tensor output_norm.weight (model.norm.weight in the file)", "past end of file"}},
		{"truncated header", valid[:20], []string{"past end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.safetensors")
			require.NoError(t, os.WriteFile(path, tc.file, 0o644))
			src, err := models.OpenSafetensors(path)
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
			index := filepath.Join(dir, models.SafetensorsIndexFile)
			require.NoError(t, os.WriteFile(index, []byte(tc.index), 0o644))
			_, err := models.OpenSafetensors(dir)
			require.Error(t, err)
			require.Contains(t, err.Error(), index)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := models.OpenSafetensors(t.TempDir())
	require.ErrorContains(t, err, models.SafetensorsFile)
	_, err = models.OpenSafetensors(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)
	_, _, err = models.Open(filepath.Join(t.TempDir(), "absent"))
	require.Error(t, err)
}

// ggufFixture writes a small GGUF and returns its path and bytes.
func ggufFixture(t testing.TB) (string, []byte) {
	t.Helper()
	cfg := models.Config{Name: "fx", Hidden: 8, Intermediate: 16, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 4,
		Vocab: 10, RopeTheta: 10000, RMSEps: 1e-5, ContextLength: 16, RopeLayout: models.RopeAdjacentPairs}
	d, err := models.NewDummy(cfg, 5)
	require.NoError(t, err)
	ts, err := models.ReadAll(d, dtype.F32)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "fx.gguf")
	require.NoError(t, models.WriteGGUF(path, cfg, ts))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, b
}

// patchTensorInfo rewrites the type and offset fields of a tensor's info in a GGUF image.
func patchTensorInfo(t *testing.T, b []byte, name string, typ *uint32, offset *uint64) []byte {
	t.Helper()
	b = bytes.Clone(b)
	key := binary.LittleEndian.AppendUint64(nil, uint64(len(name)))
	key = append(key, name...)
	i := bytes.Index(b, key)
	require.Positive(t, i, name)
	p := i + len(key)
	ndims := int(binary.LittleEndian.Uint32(b[p:]))
	p += 4 + 8*ndims
	if typ != nil {
		binary.LittleEndian.PutUint32(b[p:], *typ)
	}
	if offset != nil {
		binary.LittleEndian.PutUint64(b[p+4:], *offset)
	}
	return b
}

func TestGGUFMalformed(t *testing.T) {
	_, valid := ggufFixture(t)
	q8 := uint32(8) // GGML Q8_0
	i64 := uint32(27)
	farOff := uint64(1 << 40)
	misaligned := uint64(4)
	for _, tc := range []struct {
		name string
		file []byte
		want []string
	}{
		{"empty", nil, nil},
		{"not gguf", []byte("this is not a gguf file at all, not even close"), nil},
		{"truncated header", valid[:40], nil},
		{"truncated data", valid[:len(valid)-100], []string{"tensor data"}},
		{"partial quantized blocks", patchTensorInfo(t, valid, "blk.0.ffn_up.weight", &q8, nil), []string{"tensor blk.0.ffn_up.weight", "q8_0 rows of 8 values are not a whole number of 32-value blocks"}},
		{"unsupported block type", patchTensorInfo(t, valid, "blk.0.ffn_up.weight", ptr(uint32(11)), nil), []string{"tensor blk.0.ffn_up.weight", "Q3_K", "supported: F32, F16, BF16, Q8_0"}},
		{"integer tensor", patchTensorInfo(t, valid, models.OutputNorm, &i64, nil), []string{"tensor " + models.OutputNorm, "I64"}},
		{"offset past end", patchTensorInfo(t, valid, "blk.0.attn_k.weight", nil, &farOff), []string{"tensor blk.0.attn_k.weight", "past end of file"}},
		{"last tensor past end", patchTensorInfo(t, valid, models.Output, nil, ptr(uint64(len(valid)))), []string{"tensor " + models.Output, "past end of file"}},
		{"unknown type", patchTensorInfo(t, valid, models.TokenEmbd, ptr(uint32(250)), nil), nil},
		{"misaligned offset", patchTensorInfo(t, valid, models.TokenEmbd, nil, &misaligned), nil},
		{"other architecture", bytes.Replace(valid, []byte("llama"), []byte("gemma"), 1), []string{"general.architecture", "gemma"}},
		{"missing key", bytes.Replace(valid, []byte("llama.embedding_length"), []byte("llama.embedding_lengtx"), 1), []string{"llama.embedding_length", "missing"}},
		{"missing eps", bytes.Replace(valid, []byte("layer_norm_rms_epsilon"), []byte("layer_norm_rms_epsilox"), 1), []string{"layer_norm_rms_epsilon", "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.gguf")
			require.NoError(t, os.WriteFile(path, tc.file, 0o644))
			src, _, err := models.OpenGGUF(path)
			if tc.name == "misaligned offset" {
				// Overlapping but in-bounds data is not detectable; the read is still safe.
				if err == nil {
					require.NoError(t, src.Close())
				}
				return
			}
			require.Error(t, err)
			t.Log(err)
			require.Nil(t, src)
			require.Contains(t, err.Error(), path)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "m-00001-of-00002.gguf")
	require.NoError(t, os.WriteFile(path, valid, 0o644))
	_, _, err := models.OpenGGUF(path)
	require.ErrorContains(t, err, "split")
	_, err = models.ConfigFromGGUF(filepath.Join(t.TempDir(), "absent.gguf"))
	require.ErrorContains(t, err, "absent.gguf")
}

func ptr[T any](v T) *T { return &v }

func TestWritersRejectBadTensors(t *testing.T) {
	good := models.Tensor{Info: models.TensorInfo{Name: "a", Shape: []int{2}, DType: dtype.F32}, Data: []float32{1, 2}}
	cfg := roundTripConfigs()[0]
	for _, tc := range []struct {
		name string
		ts   []models.Tensor
		want string
	}{
		{"duplicate", []models.Tensor{good, good}, "twice"},
		{"empty name", []models.Tensor{{Info: models.TensorInfo{Shape: []int{2}, DType: dtype.F32}, Data: []float32{1, 2}}}, "empty name"},
		{"bad dtype", []models.Tensor{{Info: models.TensorInfo{Name: "a", Shape: []int{2}}, Data: []float32{1, 2}}}, "dtype"},
		{"short data", []models.Tensor{{Info: models.TensorInfo{Name: "a", Shape: []int{2, 2}, DType: dtype.F16}, Data: []float32{1, 2}}}, "2 values"},
		{"3-D", []models.Tensor{{Info: models.TensorInfo{Name: "a", Shape: []int{1, 1, 1}, DType: dtype.F16}, Data: []float32{1}}}, "dimensions"},
		{"negative", []models.Tensor{{Info: models.TensorInfo{Name: "a", Shape: []int{-1}, DType: dtype.F16}}}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x")
			err := models.WriteSafetensors(p, tc.ts)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, p)
			err = models.WriteGGUF(p, cfg, tc.ts)
			require.ErrorContains(t, err, tc.want)
		})
	}
	err := models.WriteSafetensors(filepath.Join(t.TempDir(), "x"), []models.Tensor{{Info: models.TensorInfo{Name: "__metadata__", Shape: []int{1}, DType: dtype.F32}, Data: []float32{1}}})
	require.ErrorContains(t, err, "reserved")
	err = models.WriteGGUF(filepath.Join(t.TempDir(), "x"), models.Config{}, nil)
	require.ErrorContains(t, err, "Hidden")
	long := good
	long.Info.Name = strings.Repeat("n", 64)
	err = models.WriteGGUF(filepath.Join(t.TempDir(), "x"), cfg, []models.Tensor{long})
	require.ErrorContains(t, err, "63 bytes")
	err = models.WriteSafetensors(filepath.Join(t.TempDir(), "no", "such", "dir"), []models.Tensor{good})
	require.Error(t, err)
}

// TestConcurrentShardReads has eight ranks read their shards of every tensor at once from
// one mapped file, as a TP group loading a checkpoint does (run with -race).
func TestConcurrentShardReads(t *testing.T) {
	cfg := roundTripConfigs()[0]
	ts := dummyTensors(t, cfg, dtype.BF16)
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, models.WriteGGUF(path, cfg, ts))
	src, _, err := models.OpenGGUF(path)
	require.NoError(t, err)
	defer src.Close()
	const ranks = 8
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	for rank := range ranks {
		wg.Go(func() {
			for _, tn := range ts {
				rows, cols := tn.Info.Dims()
				lo, hi := rank*rows/ranks, (rank+1)*rows/ranks
				out := make([]float32, (hi-lo)*cols)
				if err := src.Read(tn.Info.Name, tn.Info.RowRange(lo, hi), models.F32Dest(out)); err != nil {
					errs[rank] = err
					return
				}
				if !slicesEqual(out, tn.Data[lo*cols:hi*cols]) {
					errs[rank] = fmt.Errorf("rank %d: %s rows [%d,%d) differ", rank, tn.Info.Name, lo, hi)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
