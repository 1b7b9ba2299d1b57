package models_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/models/format"
)

var allDTypes = []dtype.DType{dtype.F32, dtype.F16, dtype.BF16}

// roundTripConfigs are small models with GQA and, in one, a head dim that is not
// Hidden/Heads (so attn_output is not square) and tied embeddings.
func roundTripConfigs() []models.Config {
	return []models.Config{
		{Name: "rt-untied", Hidden: 32, Intermediate: 48, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8,
			Vocab: 40, RopeTheta: 10000, RMSEps: 1e-5, ContextLength: 64, RopeLayout: models.RopeAdjacentPairs},
		{Name: "rt-tied", Hidden: 24, Intermediate: 40, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 16,
			Vocab: 30, RopeTheta: 500000, RMSEps: 1e-6, ContextLength: 32, TiedEmbeddings: true, RopeLayout: models.RopeAdjacentPairs},
	}
}

// dummyTensors draws dummy weights for cfg, rounded to dt: they stand for a checkpoint in
// GGUF's adjacent-pairs layout.
func dummyTensors(t *testing.T, cfg models.Config, dt dtype.DType) []format.Tensor {
	t.Helper()
	d, err := models.NewDummy(cfg, 42)
	require.NoError(t, err)
	ts, err := format.ReadAll(d, dt)
	require.NoError(t, err)
	return ts
}

// qkHeads returns how many heads a Q or K tensor holds, or 0 for other tensors.
func qkHeads(cfg models.Config, name string) int {
	_, kind, ok := models.ParseLayerTensorName(name)
	switch {
	case ok && kind == models.AttnQ:
		return cfg.Heads
	case ok && kind == models.AttnK:
		return cfg.KVHeads
	}
	return 0
}

// toHF turns GGUF-layout tensors into a Hugging Face checkpoint's: Q and K rows in the
// half-split layout, HF names.
func toHF(t *testing.T, cfg models.Config, ts []format.Tensor) []format.Tensor {
	t.Helper()
	out := make([]format.Tensor, len(ts))
	for i, tn := range ts {
		if h := qkHeads(cfg, tn.Info.Name); h > 0 {
			data, err := models.PermuteQKToHalfSplit(tn.Data, h, cfg.HeadDim, cfg.Hidden)
			require.NoError(t, err)
			tn.Data = data
		}
		name, err := models.HFName(tn.Info.Name)
		require.NoError(t, err)
		tn.Info.Name = name
		out[i] = tn
	}
	return out
}

// requireSameWeights reads every tensor of want back from src (undoing the half-split
// permutation of Q and K when halfSplit) and compares bit for bit.
func requireSameWeights(t *testing.T, cfg models.Config, src format.Source, want []format.Tensor, halfSplit bool) {
	t.Helper()
	require.Len(t, src.Tensors(), len(want))
	for _, w := range want {
		info, ok := src.Tensor(w.Info.Name)
		require.True(t, ok, w.Info.Name)
		require.Equal(t, w.Info.DType, info.DType, w.Info.Name)
		require.Equal(t, w.Info.Shape, info.Shape, w.Info.Name)
		got, err := format.ReadTensor(src, w.Info.Name)
		require.NoError(t, err)
		if h := qkHeads(cfg, w.Info.Name); h > 0 && halfSplit {
			got, err = models.PermuteQKToAdjacent(got, h, cfg.HeadDim, cfg.Hidden)
			require.NoError(t, err)
		}
		require.Equal(t, w.Data, got, w.Info.Name)
	}
}

func TestGGUFRoundTrip(t *testing.T) {
	for _, cfg := range roundTripConfigs() {
		for _, dt := range allDTypes {
			t.Run(fmt.Sprintf("%s/%v", cfg.Name, dt), func(t *testing.T) {
				ts := dummyTensors(t, cfg, dt)
				path := filepath.Join(t.TempDir(), "model.gguf")
				require.NoError(t, models.WriteGGUF(path, cfg, ts))

				src, got, err := models.OpenGGUF(path)
				require.NoError(t, err)
				defer src.Close()
				want := cfg
				want.RopeTheta = float64(float32(cfg.RopeTheta)) // GGUF stores float32
				want.RMSEps = float64(float32(cfg.RMSEps))
				require.Equal(t, want, got)
				onlyCfg, err := models.ConfigFromGGUF(path)
				require.NoError(t, err)
				require.Equal(t, want, onlyCfg)
				require.NoError(t, cfg.CheckSource(src))
				requireSameWeights(t, cfg, src, ts, false)

				for _, name := range []string{"blk.0.attn_q.weight", "blk.0.attn_output.weight", models.TokenEmbd, "blk.0.ffn_norm.weight"} {
					info, _ := src.Tensor(name)
					full, err := format.ReadTensor(src, name)
					require.NoError(t, err)
					rows, cols := info.Dims()
					requireShardReadsMatch(t, src, info, full, rows, cols)
				}
				requireReadErrors(t, src, "blk.0.ffn_up.weight")
			})
		}
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	for _, cfg := range roundTripConfigs() {
		for _, dt := range allDTypes {
			t.Run(fmt.Sprintf("%s/%v", cfg.Name, dt), func(t *testing.T) {
				ts := dummyTensors(t, cfg, dt)
				hf := toHF(t, cfg, ts)
				dir := t.TempDir()
				require.NoError(t, format.WriteSafetensors(filepath.Join(dir, format.SafetensorsFile), hf))
				require.NoError(t, models.WriteHFConfig(filepath.Join(dir, models.HFConfigFile), cfg))

				wantCfg := cfg
				wantCfg.RopeLayout = models.RopeHalfSplit
				for _, p := range []string{dir, filepath.Join(dir, format.SafetensorsFile)} {
					src, got, err := models.Open(p)
					require.NoError(t, err)
					require.Equal(t, wantCfg, got)
					require.Equal(t, "safetensors", src.Format())
					require.NoError(t, cfg.CheckSource(src))
					requireSameWeights(t, cfg, src, ts, true)
					info, _ := src.Tensor("blk.0.attn_k.weight")
					full, err := format.ReadTensor(src, info.Name)
					require.NoError(t, err)
					rows, cols := info.Dims()
					requireShardReadsMatch(t, src, info, full, rows, cols)
					requireReadErrors(t, src, "blk.0.ffn_down.weight")
					require.NoError(t, src.Close())
					require.NoError(t, src.Close(), "closing twice is a no-op")
					err = src.Read(info.Name, info.All(), format.F32Dest(full))
					require.ErrorContains(t, err, "closed")
				}
			})
		}
	}
}

// writeSharded writes tensors into n safetensors files and an index mapping each.
func writeSharded(t *testing.T, dir string, ts []format.Tensor, n int) map[string]string {
	t.Helper()
	weightMap := map[string]string{}
	for s := range n {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, n)
		var part []format.Tensor
		for i := s; i < len(ts); i += n {
			part = append(part, ts[i])
			weightMap[ts[i].Info.Name] = file
		}
		require.NoError(t, format.WriteSafetensors(filepath.Join(dir, file), part))
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, format.SafetensorsIndexFile), idx, 0o644))
	return weightMap
}

func TestSafetensorsShardedRoundTrip(t *testing.T) {
	cfg := roundTripConfigs()[0]
	for _, dt := range allDTypes {
		t.Run(dt.String(), func(t *testing.T) {
			ts := dummyTensors(t, cfg, dt)
			dir := t.TempDir()
			writeSharded(t, dir, toHF(t, cfg, ts), 3)
			require.NoError(t, models.WriteHFConfig(filepath.Join(dir, models.HFConfigFile), cfg))
			for _, p := range []string{dir, filepath.Join(dir, format.SafetensorsIndexFile)} {
				src, got, err := models.Open(p)
				require.NoError(t, err)
				require.Equal(t, models.RopeHalfSplit, got.RopeLayout)
				requireSameWeights(t, cfg, src, ts, true)
				require.NoError(t, src.Close())
			}
		})
	}
}

// TestGGUFAndSafetensorsAgree writes the same weights in both formats and checks that a
// rank's Q shard read from GGUF equals the permuted Q read from safetensors.
func TestGGUFAndSafetensorsAgree(t *testing.T) {
	cfg := roundTripConfigs()[0]
	ts := dummyTensors(t, cfg, dtype.BF16)
	dir := t.TempDir()
	gpath := filepath.Join(dir, "m.gguf")
	require.NoError(t, models.WriteGGUF(gpath, cfg, ts))
	spath := filepath.Join(dir, format.SafetensorsFile)
	require.NoError(t, format.WriteSafetensors(spath, toHF(t, cfg, ts)))
	g, _, err := models.OpenGGUF(gpath)
	require.NoError(t, err)
	defer g.Close()
	s, err := format.OpenSafetensors(spath, models.CanonicalName)
	require.NoError(t, err)
	defer s.Close()
	for _, info := range g.Tensors() {
		a, err := format.ReadTensor(g, info.Name)
		require.NoError(t, err)
		b, err := format.ReadTensor(s, info.Name)
		require.NoError(t, err)
		if h := qkHeads(cfg, info.Name); h > 0 {
			require.NotEqual(t, a, b, "%s: the layouts differ", info.Name)
			b, err = models.PermuteQKToAdjacent(b, h, cfg.HeadDim, cfg.Hidden)
			require.NoError(t, err)
		}
		require.Equal(t, a, b, info.Name)
	}
}

// TestReadIntoDeviceBuffer reads a rank's Q, K and V row shards into one fused bf16 device
// buffer, as a column-parallel QKV layer holds them.
func TestReadIntoDeviceBuffer(t *testing.T) {
	cfg := roundTripConfigs()[0]
	ts := dummyTensors(t, cfg, dtype.F32)
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, models.WriteGGUF(path, cfg, ts))
	src, _, err := models.OpenGGUF(path)
	require.NoError(t, err)
	defer src.Close()

	node, err := device.NewNode(device.NodeConfig{Devices: 2, SMs: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, node.Close()) }()
	const tp = 2
	for rank := range tp {
		d, err := node.Device(rank)
		require.NoError(t, err)
		qRows, kvRows := cfg.QDim()/tp, cfg.KVDim()/tp
		buf, err := d.Alloc(dtype.BF16, (qRows+2*kvRows)*cfg.Hidden)
		require.NoError(t, err)
		dst := format.BufferDest(buf)
		require.Equal(t, buf.Len(), dst.Len())
		off := 0
		for _, part := range []struct {
			kind string
			rows int
		}{{models.AttnQ, qRows}, {models.AttnK, kvRows}, {models.AttnV, kvRows}} {
			name := models.LayerTensorName(1, part.kind)
			info, _ := src.Tensor(name)
			n := part.rows * cfg.Hidden
			require.NoError(t, src.Read(name, info.RowRange(rank*part.rows, (rank+1)*part.rows), dst.Slice(off, off+n)))
			full, err := format.ReadTensor(src, name)
			require.NoError(t, err)
			for i, x := range full[rank*n : (rank+1)*n] {
				require.Equal(t, dtype.F32ToBF16(x), buf.Uint16s()[off+i], "%s rank %d element %d", name, rank, i)
			}
			off += n
		}
		require.Equal(t, buf.Len(), off)
		require.NoError(t, buf.Free())
	}

	f32, err := node.Devices()[0].Alloc(dtype.F32, cfg.Hidden)
	require.NoError(t, err)
	require.NoError(t, src.Read(models.OutputNorm, format.TensorInfo{Shape: []int{cfg.Hidden}}.All(), format.BufferDest(f32)))
	want, err := format.ReadTensor(src, models.OutputNorm)
	require.NoError(t, err)
	require.Equal(t, want, f32.Float32s())
}
