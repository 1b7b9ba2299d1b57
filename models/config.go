package models

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models/format"
)

// RopeLayout says which pairs of a head's dimensions RoPE rotates together, which depends on
// how the checkpoint orders the rows of Q and K; the RoPE kernel's own type.
type RopeLayout = layers.RopeLayout

// The layouts checkpoints come in.
const (
	// RopeAdjacentPairs rotates (x[2i], x[2i+1]) by θ_i: llama.cpp's layout, in which GGUF
	// checkpoints store Q and K (convert_hf_to_gguf permutes the rows).
	RopeAdjacentPairs = layers.RopeAdjacent
	// RopeHalfSplit rotates (x[i], x[i+d/2]) by θ_i: Hugging Face's layout ("rotate_half"),
	// in which safetensors checkpoints store Q and K.
	RopeHalfSplit = layers.RopeHalfSplit
)

// Config is the shape of a Llama-family decoder: pre-norm blocks of grouped-query attention
// with RoPE and a SwiGLU MLP, RMSNorm everywhere.
type Config struct {
	// Name identifies the model in reports (a preset name, general.name, or the checkpoint
	// directory).
	Name string
	// Hidden is the model (residual stream) width.
	Hidden int
	// Intermediate is the width of the SwiGLU MLP (gate and up projections).
	Intermediate int
	// Layers is the number of decoder blocks.
	Layers int
	// Heads is the number of query heads.
	Heads int
	// KVHeads is the number of key/value heads (Heads for multi-head attention, fewer for
	// grouped-query attention); it divides Heads.
	KVHeads int
	// HeadDim is the width of one head, usually Hidden/Heads; even, because RoPE rotates
	// pairs.
	HeadDim int
	// Vocab is the number of token ids (rows of the embedding and the LM head).
	Vocab int
	// RopeTheta is RoPE's frequency base θ: dimension pair i rotates by pos·θ^(-2i/HeadDim).
	RopeTheta float64
	// RMSEps is the ε added to the mean square in every RMSNorm.
	RMSEps float64
	// TiedEmbeddings reports that the LM head reuses token_embd.weight (no output.weight).
	TiedEmbeddings bool
	// ContextLength is the longest sequence the model was trained for.
	ContextLength int
	// RopeLayout is the RoPE pairing the checkpoint's Q and K rows are stored for.
	RopeLayout RopeLayout
	// RopeScaling scales RoPE's frequencies (Hugging Face's rope_scaling; a GGUF file
	// stores the resulting factors as rope_freqs.weight instead).
	RopeScaling RopeScaling
	// Arch names the architecture when it is not Llama's ("qwen2", "qwen3"; "" is
	// "llama"); QKVBias and QKNorm are its traits (see Arch), which the decoder follows.
	Arch            string
	QKVBias, QKNorm bool
}

// QDim is the width of the query projection's output, Heads·HeadDim.
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of the key (and of the value) projection's output, KVHeads·HeadDim.
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Validate checks that every field is usable; the error names each bad field and value.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, why string, v any) {
		errs = append(errs, fmt.Errorf("models: config %q: %s %s, got %v", c.Name, field, why, v))
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Hidden", c.Hidden}, {"Intermediate", c.Intermediate}, {"Layers", c.Layers},
		{"Heads", c.Heads}, {"KVHeads", c.KVHeads}, {"HeadDim", c.HeadDim},
		{"Vocab", c.Vocab}, {"ContextLength", c.ContextLength},
	} {
		if f.v <= 0 {
			bad(f.name, "must be positive", f.v)
		}
	}
	if c.Heads > 0 && c.KVHeads > 0 && c.Heads%c.KVHeads != 0 {
		bad("KVHeads", fmt.Sprintf("must divide Heads (%d)", c.Heads), c.KVHeads)
	}
	if c.HeadDim > 0 && c.HeadDim%2 != 0 {
		bad("HeadDim", "must be even (RoPE rotates pairs)", c.HeadDim)
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		bad("RopeTheta", "must be positive and finite", c.RopeTheta)
	}
	if !(c.RMSEps > 0) || math.IsInf(c.RMSEps, 0) {
		bad("RMSEps", "must be positive and finite", c.RMSEps)
	}
	if c.RopeLayout != RopeAdjacentPairs && c.RopeLayout != RopeHalfSplit {
		bad("RopeLayout", "must be RopeAdjacentPairs or RopeHalfSplit", c.RopeLayout)
	}
	if err := c.RopeScaling.validate(); err != nil {
		errs = append(errs, fmt.Errorf("models: config %q: RopeScaling: %w", c.Name, err))
	}
	if _, err := LookupArch(c.Arch); c.Arch != "" && err != nil {
		bad("Arch", "must be one of "+knownArchs(), c.Arch)
	}
	return errors.Join(errs...)
}

// Tensors lists the model's tensors under their canonical names, with shapes [out, in] for
// matrices and [n] for norm weights and biases, all of element type t: token_embd.weight,
// then per layer attn_norm, attn_q, attn_k, attn_v (with their biases if QKVBias, then
// attn_q_norm and attn_k_norm if QKNorm), attn_output, ffn_norm, ffn_gate, ffn_up,
// ffn_down, then output_norm.weight and (unless TiedEmbeddings) output.weight.
func (c Config) Tensors(t dtype.DType) []format.TensorInfo {
	h, q, kv, ff := c.Hidden, c.QDim(), c.KVDim(), c.Intermediate
	out := make([]format.TensorInfo, 0, 3+9*max(c.Layers, 0))
	add := func(name string, shape ...int) {
		out = append(out, format.TensorInfo{Name: name, Shape: shape, DType: t})
	}
	add(TokenEmbd, c.Vocab, h)
	for l := range max(c.Layers, 0) {
		add(LayerTensorName(l, AttnNorm), h)
		add(LayerTensorName(l, AttnQ), q, h)
		add(LayerTensorName(l, AttnK), kv, h)
		add(LayerTensorName(l, AttnV), kv, h)
		if c.QKVBias {
			add(LayerBiasName(l, AttnQ), q)
			add(LayerBiasName(l, AttnK), kv)
			add(LayerBiasName(l, AttnV), kv)
		}
		if c.QKNorm {
			add(LayerTensorName(l, AttnQNorm), c.HeadDim)
			add(LayerTensorName(l, AttnKNorm), c.HeadDim)
		}
		add(LayerTensorName(l, AttnOutput), h, q)
		add(LayerTensorName(l, FFNNorm), h)
		add(LayerTensorName(l, FFNGate), ff, h)
		add(LayerTensorName(l, FFNUp), ff, h)
		add(LayerTensorName(l, FFNDown), h, ff)
	}
	add(OutputNorm, h)
	if !c.TiedEmbeddings {
		add(Output, c.Vocab, h)
	}
	return out
}

// ParamCount is the number of weights the model holds: embedding, every block's norms and
// projections, the final norm, and the LM head unless it is tied to the embedding.
func (c Config) ParamCount() int64 {
	var n int64
	for _, t := range c.Tensors(dtype.F32) {
		n += int64(t.Elements())
	}
	return n
}

// WeightBytes is the memory the weights take when every tensor is stored as t.
func (c Config) WeightBytes(t dtype.DType) int64 { return c.ParamCount() * int64(t.Size()) }

// CheckSource reports every tensor the config needs that src lacks or holds with another
// shape, joined into one error naming the tensors; extra tensors in src are allowed.
func (c Config) CheckSource(src format.Source) error {
	var errs []error
	for _, want := range c.Tensors(0) {
		got, ok := src.Tensor(want.Name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("models: config %q: tensor %s %v missing from %v", c.Name, want.Name, want.Shape, src))
		case !slices.Equal(got.Shape, want.Shape):
			errs = append(errs, fmt.Errorf("models: config %q: tensor %s in %v has shape %v, want %v", c.Name, want.Name, src, got.Shape, want.Shape))
		}
	}
	return errors.Join(errs...)
}
