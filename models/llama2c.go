package models

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// llama2cHeaderBytes is the size of a llama2.c checkpoint's header: seven int32.
const llama2cHeaderBytes = 7 * 4

// OpenLlama2C memory-maps a checkpoint in llama2.c's legacy format (Karpathy's llama2.c,
// MIT: the format of its run.c and of the tinyllamas models) and returns its tensors under
// canonical names and its config.
//
// The file is seven int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size —
// positive when the classifier is the token embedding, negative when a separate one
// follows —, seq_len), then f32 tensors in run.c's order: token_embedding [vocab, dim],
// rms_att [L, dim], wq [L, dim, dim], wk [L, kv_dim, dim], wv [L, kv_dim, dim], wo [L, dim,
// dim], rms_ffn [L, dim], w1 (gate) [L, hidden, dim], w2 (down) [L, dim, hidden], w3 (up)
// [L, hidden, dim], rms_final [dim], two unused RoPE tables of seq_len·head_size/2 floats,
// and the classifier [vocab, dim] when it is not shared. Matrices are [out, in], as here;
// RoPE rotates adjacent pairs (run.c), GGUF's layout; RMSNorm's ε is 1e-5 and RoPE's θ
// 10000, which the format does not store.
func OpenLlama2C(path string) (*format.FileSource, Config, error) {
	var cfg Config
	src, err := format.OpenRaw("llama2.c", path, func(data []byte) (tensors []format.RawTensor, err error) {
		cfg, tensors, err = llama2CLayout(path, strings.TrimSuffix(filepath.Base(path), ".bin"), data)
		return tensors, err
	})
	if err != nil {
		return nil, Config{}, err
	}
	return src, cfg, nil
}

// Llama2CFromBytes is OpenLlama2C for a checkpoint held in memory (an embedded model):
// name names it in errors and becomes the config's Name. data must stay unchanged while
// the source is open.
func Llama2CFromBytes(name string, data []byte) (*format.FileSource, Config, error) {
	var cfg Config
	src, err := format.RawFromBytes("llama2.c", name, data, func(data []byte) (tensors []format.RawTensor, err error) {
		cfg, tensors, err = llama2CLayout(name, name, data)
		return tensors, err
	})
	if err != nil {
		return nil, Config{}, err
	}
	return src, cfg, nil
}

// llama2CLayout reads a checkpoint's header, checks the file's size against it and places
// every tensor, each layer's slice of the stacked [L, …] arrays as its own tensor; path
// names the file in errors, name becomes the config's Name.
func llama2CLayout(path, name string, data []byte) (Config, []format.RawTensor, error) {
	fail := func(f string, args ...any) (Config, []format.RawTensor, error) {
		return Config{}, nil, fmt.Errorf("llama2.c %s: %s", path, fmt.Sprintf(f, args...))
	}
	if len(data) < llama2cHeaderBytes {
		return fail("%d bytes: shorter than the 28-byte header", len(data))
	}
	var h [7]int
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	dim, hidden, layers, heads, kvHeads, vocab, seqLen := h[0], h[1], h[2], h[3], h[4], h[5], h[6]
	shared := vocab > 0
	vocab = max(vocab, -vocab)
	for _, field := range []struct {
		name string
		v    int
	}{{"dim", dim}, {"hidden_dim", hidden}, {"n_layers", layers}, {"n_heads", heads}, {"n_kv_heads", kvHeads}, {"vocab_size", vocab}, {"seq_len", seqLen}} {
		if field.v <= 0 || field.v > 1<<20 {
			return fail("header field %s is %d: want 1 to %d", field.name, field.v, 1<<20)
		}
	}
	if dim%heads != 0 || (dim/heads)%2 != 0 {
		return fail("dim %d over %d heads: want an even head size", dim, heads)
	}
	if heads%kvHeads != 0 {
		return fail("%d heads do not group over %d KV heads", heads, kvHeads)
	}
	headSize := dim / heads
	kvDim := kvHeads * headSize
	cfg := Config{
		Name: name, Hidden: dim, Intermediate: hidden, Layers: layers, Heads: heads, KVHeads: kvHeads,
		HeadDim: headSize, Vocab: vocab, RopeTheta: 10000, RMSEps: 1e-5, TiedEmbeddings: shared,
		ContextLength: seqLen, RopeLayout: RopeAdjacentPairs,
	}

	// The tensors in file order; a stacked one holds one [shape] per layer.
	type entry struct {
		name    string
		shape   []int
		stacked bool
	}
	layer := func(kind string, shape ...int) entry { return entry{name: kind, shape: shape, stacked: true} }
	entries := []entry{
		{name: TokenEmbd, shape: []int{vocab, dim}},
		layer(AttnNorm, dim),
		layer(AttnQ, dim, dim),
		layer(AttnK, kvDim, dim),
		layer(AttnV, kvDim, dim),
		layer(AttnOutput, dim, dim),
		layer(FFNNorm, dim),
		layer(FFNGate, hidden, dim),
		layer(FFNDown, dim, hidden),
		layer(FFNUp, hidden, dim),
		{name: OutputNorm, shape: []int{dim}},
		{name: "", shape: []int{seqLen * headSize}}, // freq_cis_real and _imag: skipped
	}
	if !shared {
		entries = append(entries, entry{name: Output, shape: []int{vocab, dim}})
	}
	// The sizes are bounded by the header's checks (each at most 2^20), so the sums fit.
	want := uint64(llama2cHeaderBytes)
	for _, e := range entries {
		n := uint64(dtype.F32.Bytes(format.TensorInfo{Shape: e.shape}.Elements()))
		if e.stacked {
			n *= uint64(layers)
		}
		want += n
	}
	if uint64(len(data)) != want {
		return fail("%d bytes, but a checkpoint of dim %d, hidden_dim %d, %d layers, %d heads, %d KV heads, vocab %d (shared classifier %v) and seq_len %d takes %d",
			len(data), dim, hidden, layers, heads, kvHeads, vocab, shared, seqLen, want)
	}
	off := uint64(llama2cHeaderBytes)
	var tensors []format.RawTensor
	place := func(name string, shape []int, n uint64) {
		tensors = append(tensors, format.RawTensor{Info: format.TensorInfo{Name: name, Shape: shape, DType: dtype.F32}, Begin: off, End: off + n})
		off += n
	}
	for _, e := range entries {
		n := uint64(dtype.F32.Bytes(format.TensorInfo{Shape: e.shape}.Elements()))
		switch {
		case e.name == "":
			off += n
		case e.stacked:
			for l := range layers {
				place(LayerTensorName(l, e.name), e.shape, n)
			}
		default:
			place(e.name, e.shape, n)
		}
	}
	if err := cfg.Validate(); err != nil {
		return fail("%v", err)
	}
	return cfg, tensors, nil
}
