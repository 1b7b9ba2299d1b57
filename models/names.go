package models

import (
	"fmt"
	"strconv"
	"strings"
)

// Canonical names of the tensors outside the decoder blocks, as GGUF spells them.
const (
	// TokenEmbd is the token embedding, [Vocab, Hidden].
	TokenEmbd = "token_embd.weight"
	// OutputNorm is the final RMSNorm weight, [Hidden].
	OutputNorm = "output_norm.weight"
	// Output is the LM head, [Vocab, Hidden]; absent when the embeddings are tied.
	Output = "output.weight"
	// RopeFreqs holds Llama 3.1's RoPE frequency factors, [HeadDim/2]: frequency i is
	// divided by factor i. Optional, shared by every layer.
	RopeFreqs = "rope_freqs.weight"
)

// Kinds of per-layer tensors: the part of a canonical name between "blk.N." and ".weight".
const (
	// AttnNorm is the RMSNorm weight before attention, [Hidden].
	AttnNorm = "attn_norm"
	// AttnQ is the query projection, [Heads·HeadDim, Hidden].
	AttnQ = "attn_q"
	// AttnK is the key projection, [KVHeads·HeadDim, Hidden].
	AttnK = "attn_k"
	// AttnV is the value projection, [KVHeads·HeadDim, Hidden].
	AttnV = "attn_v"
	// AttnOutput is the attention output projection, [Hidden, Heads·HeadDim].
	AttnOutput = "attn_output"
	// FFNNorm is the RMSNorm weight before the MLP, [Hidden].
	FFNNorm = "ffn_norm"
	// FFNGate is the MLP gate projection, [Intermediate, Hidden].
	FFNGate = "ffn_gate"
	// FFNUp is the MLP up projection, [Intermediate, Hidden].
	FFNUp = "ffn_up"
	// FFNDown is the MLP down projection, [Hidden, Intermediate].
	FFNDown = "ffn_down"
	// AttnQNorm and AttnKNorm are the per-head RMSNorm weights of q and k, [HeadDim]
	// (Arch.QKNorm).
	AttnQNorm = "attn_q_norm"
	AttnKNorm = "attn_k_norm"
)

// LayerTensorName is the canonical name of a per-layer tensor: "blk.<layer>.<kind>.weight".
func LayerTensorName(layer int, kind string) string {
	return "blk." + strconv.Itoa(layer) + "." + kind + ".weight"
}

// LayerBiasName is the canonical name of a per-layer bias: "blk.<layer>.<kind>.bias"
// (Arch.QKVBias: kinds AttnQ, AttnK and AttnV, each [rows of the projection]).
func LayerBiasName(layer int, kind string) string {
	return "blk." + strconv.Itoa(layer) + "." + kind + ".bias"
}

// ParseLayerTensorName splits a canonical per-layer name into its layer and kind; ok is
// false for names outside the blocks.
func ParseLayerTensorName(name string) (layer int, kind string, ok bool) {
	rest, found := strings.CutPrefix(name, "blk.")
	if !found {
		return 0, "", false
	}
	num, rest, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	kind, found = strings.CutSuffix(rest, ".weight")
	if !found || kind == "" || strings.Contains(kind, ".") {
		return 0, "", false
	}
	layer, err := strconv.Atoi(num)
	if err != nil || layer < 0 || strconv.Itoa(layer) != num {
		return 0, "", false
	}
	return layer, kind, true
}

// hfLayerKinds maps the Hugging Face per-layer module paths to canonical kinds.
func hfLayerKind(module string) (string, bool) {
	switch module {
	case "self_attn.q_proj":
		return AttnQ, true
	case "self_attn.k_proj":
		return AttnK, true
	case "self_attn.v_proj":
		return AttnV, true
	case "self_attn.o_proj":
		return AttnOutput, true
	case "mlp.gate_proj":
		return FFNGate, true
	case "mlp.up_proj":
		return FFNUp, true
	case "mlp.down_proj":
		return FFNDown, true
	case "input_layernorm":
		return AttnNorm, true
	case "post_attention_layernorm":
		return FFNNorm, true
	case "self_attn.q_norm":
		return AttnQNorm, true
	case "self_attn.k_norm":
		return AttnKNorm, true
	}
	return "", false
}

func hfLayerModule(kind string) (string, bool) {
	switch kind {
	case AttnQ:
		return "self_attn.q_proj", true
	case AttnK:
		return "self_attn.k_proj", true
	case AttnV:
		return "self_attn.v_proj", true
	case AttnOutput:
		return "self_attn.o_proj", true
	case FFNGate:
		return "mlp.gate_proj", true
	case FFNUp:
		return "mlp.up_proj", true
	case FFNDown:
		return "mlp.down_proj", true
	case AttnNorm:
		return "input_layernorm", true
	case FFNNorm:
		return "post_attention_layernorm", true
	case AttnQNorm:
		return "self_attn.q_norm", true
	case AttnKNorm:
		return "self_attn.k_norm", true
	}
	return "", false
}

// CanonicalName maps a Hugging Face Llama-family tensor name (model.embed_tokens.weight,
// model.layers.N.self_attn.q_proj.weight, its .bias, self_attn.q_norm.weight, …,
// model.norm.weight, lm_head.weight) to its canonical GGUF name; ok is false for names it
// does not know.
func CanonicalName(hf string) (name string, ok bool) {
	switch hf {
	case "model.embed_tokens.weight":
		return TokenEmbd, true
	case "model.norm.weight":
		return OutputNorm, true
	case "lm_head.weight":
		return Output, true
	}
	rest, found := strings.CutPrefix(hf, "model.layers.")
	if !found {
		return "", false
	}
	num, rest, found := strings.Cut(rest, ".")
	if !found {
		return "", false
	}
	layer, err := strconv.Atoi(num)
	if err != nil || layer < 0 || strconv.Itoa(layer) != num {
		return "", false
	}
	if module, found := strings.CutSuffix(rest, ".bias"); found {
		if kind, ok := hfLayerKind(module); ok && isBiased(kind) {
			return LayerBiasName(layer, kind), true
		}
		return "", false
	}
	module, found := strings.CutSuffix(rest, ".weight")
	if !found {
		return "", false
	}
	kind, ok := hfLayerKind(module)
	if !ok {
		return "", false
	}
	return LayerTensorName(layer, kind), true
}

// isBiased reports whether a layer kind may carry a bias (Arch.QKVBias).
func isBiased(kind string) bool { return kind == AttnQ || kind == AttnK || kind == AttnV }

// HFName maps a canonical tensor name to its Hugging Face name; the inverse of
// CanonicalName.
func HFName(name string) (string, error) {
	switch name {
	case TokenEmbd:
		return "model.embed_tokens.weight", nil
	case OutputNorm:
		return "model.norm.weight", nil
	case Output:
		return "lm_head.weight", nil
	}
	if layer, kind, ok := ParseLayerTensorName(name); ok {
		if module, ok := hfLayerModule(kind); ok {
			return "model.layers." + strconv.Itoa(layer) + "." + module + ".weight", nil
		}
	}
	for _, kind := range []string{AttnQ, AttnK, AttnV} {
		var layer int
		if n, err := fmt.Sscanf(name, "blk.%d."+kind+".bias", &layer); err == nil && n == 1 && LayerBiasName(layer, kind) == name {
			module, _ := hfLayerModule(kind)
			return "model.layers." + strconv.Itoa(layer) + "." + module + ".bias", nil
		}
	}
	return "", fmt.Errorf("models: tensor %q has no Hugging Face name", name)
}
