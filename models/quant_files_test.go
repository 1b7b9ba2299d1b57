package models_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/quant"
)

const quantDir = "../../shared/testdata/quant"

// TestQuantizersMatchLlamaQuantize: quantizing the f32 tiny model's tensors with package
// quant gives, byte for byte, the blocks llama.cpp's llama-quantize wrote into the quant
// test files (reference quantizers, no importance matrix), for every tensor of every type.
// The narrow file's f32 model is not in the test data, so its own tensors, dequantized,
// are the input: its types are 32-value blocks only (Q5_0, Q8_0), and requantizing such a
// block gives it back (so every such tensor of these files does). That checks its blocks
// are read and dequantized exactly; the tiny files check the quantizers' rounding.
func TestQuantizersMatchLlamaQuantize(t *testing.T) {
	f32, _, err := models.OpenGGUF(needTinyGGUF(t))
	require.NoError(t, err)
	defer f32.Close()
	for _, tc := range []struct {
		name       string
		requantize bool // quantize the file's own dequantized values, not the f32 model's
	}{
		{"tiny-Q8_0", false}, {"tiny-Q4_0", false}, {"tiny-Q6_K", false}, {"tiny-Q4_K_M", false},
		{"tiny-Q5_0", false}, {"tiny-Q5_1", false}, {"narrow-Q4_K_M", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(quantDir, tc.name+".gguf")
			needShared(t, path)
			src, _, err := models.OpenGGUF(path)
			require.NoError(t, err)
			defer src.Close()
			from := format.Source(f32)
			if tc.requantize {
				from = src
			}
			for _, info := range src.Tensors() {
				if !info.DType.Quantized() {
					continue
				}
				want := make([]byte, quantBytes(info))
				require.NoError(t, src.Read(info.Name, info.All(), format.BlockDest(info.DType, want)))
				values, err := format.ReadTensor(from, info.Name)
				require.NoError(t, err)
				got := make([]byte, len(want))
				require.NoError(t, quant.Quantize(info.DType, got, values))
				diff := 0
				for b := 0; b < len(got); b += info.DType.BlockBytes() {
					if string(got[b:b+info.DType.BlockBytes()]) != string(want[b:b+info.DType.BlockBytes()]) {
						diff++
					}
				}
				require.Zero(t, diff, fmt.Sprintf("%s %v: %d of %d blocks differ", info.Name, info.DType, diff, len(got)/info.DType.BlockBytes()))
			}
		})
	}
}

func quantBytes(info format.TensorInfo) int {
	rows, cols := info.Dims()
	return rows * info.DType.Bytes(cols)
}

func needShared(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("shared test data absent (%v): %s is needed for this test", err, path)
	}
}

// TestWriteGGUFQuantized: WriteGGUF stores every block type (quantizing the values, or the
// blocks given), OpenGGUF reads the same blocks back, and a file read whole and written
// again is byte for byte the file.
func TestWriteGGUFQuantized(t *testing.T) {
	cfg, err := models.Preset("tiny")
	require.NoError(t, err)
	cfg.Hidden, cfg.Intermediate, cfg.HeadDim = 256, 768, 32 // rows of whole 256-value blocks
	src, err := models.NewDummy(cfg, 3)
	require.NoError(t, err)
	tensors, err := format.ReadAll(src, 0)
	require.NoError(t, err)
	types := []dtype.DType{dtype.Q8_0, dtype.Q4_0, dtype.Q4_K, dtype.Q5_K, dtype.Q6_K, dtype.Q5_0, dtype.Q5_1}
	i := 0
	for k := range tensors {
		if len(tensors[k].Info.Shape) == 2 {
			tensors[k].Info.DType = types[i%len(types)]
			i++
		}
	}
	path := filepath.Join(t.TempDir(), "q.gguf")
	require.NoError(t, models.WriteGGUF(path, cfg, tensors))
	back, _, err := models.OpenGGUF(path)
	require.NoError(t, err)
	defer back.Close()
	for _, tn := range tensors {
		info, ok := back.Tensor(tn.Info.Name)
		require.True(t, ok, tn.Info.Name)
		require.Equal(t, tn.Info.DType, info.DType, tn.Info.Name)
		if !info.DType.Quantized() {
			continue
		}
		want := make([]byte, quantBytes(info))
		require.NoError(t, quant.Quantize(info.DType, want, tn.Data))
		got := make([]byte, len(want))
		require.NoError(t, back.Read(info.Name, info.All(), format.BlockDest(info.DType, got)))
		require.Equal(t, want, got, info.Name)
	}
	again, err := format.ReadAll(back, 0)
	require.NoError(t, err)
	path2 := filepath.Join(t.TempDir(), "q2.gguf")
	require.NoError(t, models.WriteGGUF(path2, cfg, again))
	a, err := os.ReadFile(path)
	require.NoError(t, err)
	b, err := os.ReadFile(path2)
	require.NoError(t, err)
	require.Equal(t, a, b)
}

// TestGGUFQuantizedBadInput: a truncated quantized tensor and a read that would cut its
// blocks fail with errors naming the tensor, its type and the sizes.
func TestGGUFQuantizedBadInput(t *testing.T) {
	path := filepath.Join(quantDir, "tiny-Q4_K_M.gguf")
	needShared(t, path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	short := filepath.Join(t.TempDir(), "short.gguf")
	require.NoError(t, os.WriteFile(short, data[:len(data)-1000], 0o644))
	_, _, err = models.OpenGGUF(short)
	require.Error(t, err)
	require.Contains(t, err.Error(), "blk.3.ffn_up.weight")
	require.Contains(t, err.Error(), "past end of file")

	src, _, err := models.OpenGGUF(path)
	require.NoError(t, err)
	defer src.Close()
	info, _ := src.Tensor("blk.0.attn_q.weight")
	err = src.Read(info.Name, info.ColRange(0, 100), format.BlockDest(dtype.Q4_K, make([]byte, 144*256)))
	require.ErrorContains(t, err, "blk.0.attn_q.weight")
	require.ErrorContains(t, err, "rows of 100 values do not fill whole 256-value q4_k blocks")
	// Any region reads exactly into an element type: the blocks it cuts are dequantized.
	part := make([]float32, 256*100)
	require.NoError(t, src.Read(info.Name, info.ColRange(7, 107), format.F32Dest(part)))
	whole := make([]float32, info.Elements())
	require.NoError(t, src.Read(info.Name, info.All(), format.F32Dest(whole)))
	for r := range 256 {
		require.Equal(t, whole[r*256+7:r*256+107], part[r*100:(r+1)*100])
	}
}
