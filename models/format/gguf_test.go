package format_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// openGGUF parses and maps a GGUF file, as a model's loader does.
func openGGUF(path string) (*format.FileSource, error) {
	gf, err := format.ParseGGUF(path)
	if err != nil {
		return nil, err
	}
	return format.OpenGGUF(path, gf)
}

// ggufFixture writes a small GGUF (fixtureTensors) and returns its path and bytes.
func ggufFixture(t testing.TB) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fx.gguf")
	require.NoError(t, format.WriteGGUF(path, []format.GGUFKV{{Key: "general.name", Value: "fx"}}, fixtureTensors(4)))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, b
}

func TestGGUFRoundTrip(t *testing.T) {
	path, _ := ggufFixture(t)
	src, err := openGGUF(path)
	require.NoError(t, err)
	defer src.Close()
	for _, want := range fixtureTensors(4) {
		info, ok := src.Tensor(want.Info.Name)
		require.True(t, ok, want.Info.Name)
		require.Equal(t, want.Info, info)
		got, err := format.ReadTensor(src, want.Info.Name)
		require.NoError(t, err)
		require.Equal(t, want.Data, got, want.Info.Name) // the values are exact in every dtype
	}
	readEverything(t, src)
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

func ptr[T any](v T) *T { return &v }

func TestGGUFMalformed(t *testing.T) {
	_, valid := ggufFixture(t)
	for _, tc := range []struct {
		name string
		file []byte
		want []string
	}{
		{"empty", nil, nil},
		{"not gguf", []byte("this is not a gguf file at all, not even close"), nil},
		{"truncated header", valid[:40], nil},
		{"truncated data", valid[:len(valid)-100], []string{"tensor data"}},
		{"partial quantized blocks", patchTensorInfo(t, valid, "w.f32", ptr(uint32(8)), nil), []string{"tensor w.f32", "q8_0 rows of 8 values are not a whole number of 32-value blocks"}},
		{"unsupported block type", patchTensorInfo(t, valid, "w.f32", ptr(uint32(11)), nil), []string{"tensor w.f32", "Q3_K", "supported: F32, F16, BF16, Q8_0"}},
		{"integer tensor", patchTensorInfo(t, valid, "norm", ptr(uint32(27)), nil), []string{"tensor norm", "I64"}},
		{"offset past end", patchTensorInfo(t, valid, "w.f16", nil, ptr(uint64(1<<40))), []string{"tensor w.f16", "past end of file"}},
		{"last tensor past end", patchTensorInfo(t, valid, "norm", nil, ptr(uint64(len(valid)))), []string{"tensor norm", "past end of file"}},
		{"unknown type", patchTensorInfo(t, valid, "w.bf16", ptr(uint32(250)), nil), nil},
		{"misaligned offset", patchTensorInfo(t, valid, "w.bf16", nil, ptr(uint64(4))), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.gguf")
			require.NoError(t, os.WriteFile(path, tc.file, 0o644))
			src, err := openGGUF(path)
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
	_, err := format.ParseGGUF(path)
	require.ErrorContains(t, err, "split")
	_, err = format.ParseGGUFMetadata(filepath.Join(t.TempDir(), "absent.gguf"))
	require.ErrorContains(t, err, "absent.gguf")
}

// TestConcurrentShardReads has eight ranks read their shards of every tensor at once from
// one mapped file, as a TP group loading a checkpoint does (run with -race).
func TestConcurrentShardReads(t *testing.T) {
	ts := fixtureTensors(64)
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, format.WriteGGUF(path, nil, ts))
	src, err := openGGUF(path)
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
				if err := src.Read(tn.Info.Name, tn.Info.RowRange(lo, hi), format.F32Dest(out)); err != nil {
					errs[rank] = err
					return
				}
				if !bytes.Equal(f32Bytes(out), f32Bytes(tn.Data[lo*cols:hi*cols])) {
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

func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func TestWritersRejectBadTensors(t *testing.T) {
	good := format.Tensor{Info: format.TensorInfo{Name: "a", Shape: []int{2}, DType: dtype.F32}, Data: []float32{1, 2}}
	for _, tc := range []struct {
		name string
		ts   []format.Tensor
		want string
	}{
		{"duplicate", []format.Tensor{good, good}, "twice"},
		{"empty name", []format.Tensor{{Info: format.TensorInfo{Shape: []int{2}, DType: dtype.F32}, Data: []float32{1, 2}}}, "empty name"},
		{"bad dtype", []format.Tensor{{Info: format.TensorInfo{Name: "a", Shape: []int{2}}, Data: []float32{1, 2}}}, "dtype"},
		{"short data", []format.Tensor{{Info: format.TensorInfo{Name: "a", Shape: []int{2, 2}, DType: dtype.F16}, Data: []float32{1, 2}}}, "2 values"},
		{"3-D", []format.Tensor{{Info: format.TensorInfo{Name: "a", Shape: []int{1, 1, 1}, DType: dtype.F16}, Data: []float32{1}}}, "dimensions"},
		{"negative", []format.Tensor{{Info: format.TensorInfo{Name: "a", Shape: []int{-1}, DType: dtype.F16}}}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x")
			err := format.WriteSafetensors(p, tc.ts)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, p)
			err = format.WriteGGUF(p, nil, tc.ts)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, p)
		})
	}
	err := format.WriteSafetensors(filepath.Join(t.TempDir(), "x"), []format.Tensor{{Info: format.TensorInfo{Name: "__metadata__", Shape: []int{1}, DType: dtype.F32}, Data: []float32{1}}})
	require.ErrorContains(t, err, "reserved")
	long := good
	long.Info.Name = strings.Repeat("n", 64)
	err = format.WriteGGUF(filepath.Join(t.TempDir(), "x"), nil, []format.Tensor{long})
	require.ErrorContains(t, err, "63 bytes")
	err = format.WriteGGUF(filepath.Join(t.TempDir(), "x"), []format.GGUFKV{{Key: "k", Value: 1.5}}, []format.Tensor{good})
	require.ErrorContains(t, err, "metadata k: value of type float64")
	err = format.WriteSafetensors(filepath.Join(t.TempDir(), "no", "such", "dir"), []format.Tensor{good})
	require.Error(t, err)
}
