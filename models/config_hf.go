package models

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// HFConfigFile is the name of a Hugging Face model's config file.
const HFConfigFile = "config.json"

// hfConfig is the part of a Hugging Face LlamaConfig this package reads; pointers tell an
// absent key from a zero.
type hfConfig struct {
	ModelType     string          `json:"model_type"`
	NameOrPath    string          `json:"_name_or_path"`
	Hidden        *int            `json:"hidden_size"`
	Intermediate  *int            `json:"intermediate_size"`
	Layers        *int            `json:"num_hidden_layers"`
	Heads         *int            `json:"num_attention_heads"`
	KVHeads       *int            `json:"num_key_value_heads"`
	HeadDim       *int            `json:"head_dim"`
	Vocab         *int            `json:"vocab_size"`
	RopeTheta     *float64        `json:"rope_theta"`
	RMSEps        *float64        `json:"rms_norm_eps"`
	Tied          *bool           `json:"tie_word_embeddings"`
	MaxPositions  *int            `json:"max_position_embeddings"`
	RopeScaling   json.RawMessage `json:"rope_scaling"`
	AttentionBias *bool           `json:"attention_bias"`
	MLPBias       *bool           `json:"mlp_bias"`
	HiddenAct     string          `json:"hidden_act"`
}

// ConfigFromHF reads a Hugging Face config.json (path is the file or the model directory):
// hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default num_attention_heads), head_dim (default
// hidden_size/num_attention_heads), vocab_size, rope_theta (default 10000), rms_norm_eps
// (default 1e-6, LlamaConfig's), tie_word_embeddings (default false),
// max_position_embeddings (default 2048). RopeLayout is RopeHalfSplit. A model_type other
// than "llama", a rope_scaling, biases or an activation other than SiLU are errors, since
// Config cannot describe them.
func ConfigFromHF(path string) (Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, HFConfigFile)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("hf config %s: %w", path, err)
	}
	var h hfConfig
	if err := json.Unmarshal(raw, &h); err != nil {
		return Config{}, fmt.Errorf("hf config %s: %w", path, err)
	}
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("hf config %s: %s", path, fmt.Sprintf(format, args...))
	}
	if h.ModelType != "" && h.ModelType != "llama" {
		return fail("model_type %q: only \"llama\" is supported", h.ModelType)
	}
	if len(h.RopeScaling) > 0 && string(h.RopeScaling) != "null" {
		return fail("rope_scaling %s: not supported", h.RopeScaling)
	}
	if h.AttentionBias != nil && *h.AttentionBias {
		return fail("attention_bias true: not supported")
	}
	if h.MLPBias != nil && *h.MLPBias {
		return fail("mlp_bias true: not supported")
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		return fail("hidden_act %q: only \"silu\" is supported", h.HiddenAct)
	}
	cfg := Config{
		Name:          h.NameOrPath,
		RopeLayout:    RopeHalfSplit,
		RopeTheta:     10000,
		RMSEps:        1e-6,
		ContextLength: 2048,
	}
	if cfg.Name == "" {
		cfg.Name = filepath.Base(filepath.Dir(path))
	}
	for _, f := range []struct {
		key string
		src *int
		dst *int
	}{
		{"hidden_size", h.Hidden, &cfg.Hidden},
		{"intermediate_size", h.Intermediate, &cfg.Intermediate},
		{"num_hidden_layers", h.Layers, &cfg.Layers},
		{"num_attention_heads", h.Heads, &cfg.Heads},
		{"vocab_size", h.Vocab, &cfg.Vocab},
	} {
		if f.src == nil {
			return fail("%s missing", f.key)
		}
		*f.dst = *f.src
	}
	cfg.KVHeads = cfg.Heads
	if h.KVHeads != nil {
		cfg.KVHeads = *h.KVHeads
	}
	switch {
	case h.HeadDim != nil:
		cfg.HeadDim = *h.HeadDim
	case cfg.Heads > 0 && cfg.Hidden%cfg.Heads == 0:
		cfg.HeadDim = cfg.Hidden / cfg.Heads
	default:
		return fail("hidden_size %d is not a multiple of num_attention_heads %d and head_dim is absent", cfg.Hidden, cfg.Heads)
	}
	if h.RopeTheta != nil {
		cfg.RopeTheta = *h.RopeTheta
	}
	if h.RMSEps != nil {
		cfg.RMSEps = *h.RMSEps
	}
	if h.Tied != nil {
		cfg.TiedEmbeddings = *h.Tied
	}
	if h.MaxPositions != nil {
		cfg.ContextLength = *h.MaxPositions
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("hf config %s: %w", path, err)
	}
	return cfg, nil
}

// WriteHFConfig writes cfg as a Hugging Face LlamaConfig config.json that ConfigFromHF
// reads back to cfg (RopeLayout aside, which is always RopeHalfSplit there).
func WriteHFConfig(path string, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("hf config %s: %w", path, err)
	}
	out := map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"_name_or_path":           cfg.Name,
		"hidden_act":              "silu",
		"hidden_size":             cfg.Hidden,
		"intermediate_size":       cfg.Intermediate,
		"num_hidden_layers":       cfg.Layers,
		"num_attention_heads":     cfg.Heads,
		"num_key_value_heads":     cfg.KVHeads,
		"head_dim":                cfg.HeadDim,
		"vocab_size":              cfg.Vocab,
		"rope_theta":              cfg.RopeTheta,
		"rms_norm_eps":            cfg.RMSEps,
		"tie_word_embeddings":     cfg.TiedEmbeddings,
		"max_position_embeddings": cfg.ContextLength,
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("hf config %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("hf config %s: %w", path, err)
	}
	return nil
}
