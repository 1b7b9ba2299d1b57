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
	SlidingWindow *int            `json:"sliding_window"`
	UseSliding    *bool           `json:"use_sliding_window"`
}

// hfRopeScaling is config.json's rope_scaling; "type" is its older spelling of rope_type.
type hfRopeScaling struct {
	RopeType        string   `json:"rope_type"`
	Type            string   `json:"type"`
	Factor          *float64 `json:"factor"`
	LowFreqFactor   *float64 `json:"low_freq_factor"`
	HighFreqFactor  *float64 `json:"high_freq_factor"`
	OriginalContext *int     `json:"original_max_position_embeddings"`
}

// hfModelTypes maps config.json's model_type to the architecture (Arch's name) and the
// class WriteHFConfig names; Mistral is Llama's decoder.
var hfModelTypes = map[string]struct{ arch, class string }{
	"llama":   {"llama", "LlamaForCausalLM"},
	"mistral": {"llama", "MistralForCausalLM"},
	"qwen2":   {"qwen2", "Qwen2ForCausalLM"},
	"qwen3":   {"qwen3", "Qwen3ForCausalLM"},
}

// ConfigFromHF reads a Hugging Face config.json (path is the file or the model directory):
// model_type (llama, mistral, qwen2 or qwen3: the architecture, see Arch), hidden_size,
// intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default
// num_attention_heads), head_dim (default hidden_size/num_attention_heads), vocab_size,
// rope_theta (default 10000), rms_norm_eps (default 1e-6, LlamaConfig's),
// tie_word_embeddings (default false), max_position_embeddings (default 2048), rope_scaling
// of rope_type llama3 (Llama 3.1). RopeLayout is RopeHalfSplit. A sliding_window (Mistral;
// Qwen's where use_sliding_window is true) shorter than the context caps ContextLength at
// it: attention over the whole context equals the windowed one while the context fits the
// window, and longer sequences are refused. Other rope_scaling types, biases beyond
// Qwen2's q/k/v, or an activation other than SiLU are errors naming the key, since Config
// cannot describe them.
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
	if h.ModelType == "" {
		h.ModelType = "llama"
	}
	mt, ok := hfModelTypes[h.ModelType]
	if !ok {
		return fail("model_type %q: supported are \"llama\", \"mistral\", \"qwen2\" and \"qwen3\"", h.ModelType)
	}
	arch, _ := LookupArch(mt.arch)
	var scaling RopeScaling
	if len(h.RopeScaling) > 0 && string(h.RopeScaling) != "null" {
		if scaling, err = parseHFRopeScaling(h.RopeScaling); err != nil {
			return fail("rope_scaling %s: %v", h.RopeScaling, err)
		}
	}
	if h.AttentionBias != nil && *h.AttentionBias {
		return fail("attention_bias true (biases on every attention projection, o_proj's included): not supported")
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
		RopeScaling:   scaling,
		QKVBias:       arch.QKVBias,
		QKNorm:        arch.QKNorm,
	}
	if arch.Name != "llama" {
		cfg.Arch = arch.Name
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
	windowed := h.ModelType == "mistral" || (h.UseSliding != nil && *h.UseSliding)
	if w := h.SlidingWindow; windowed && w != nil && *w > 0 && *w < cfg.ContextLength {
		cfg.ContextLength = *w
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("hf config %s: %w", path, err)
	}
	return cfg, nil
}

// parseHFRopeScaling reads a rope_scaling object: only rope_type llama3 is supported.
func parseHFRopeScaling(raw json.RawMessage) (RopeScaling, error) {
	var r hfRopeScaling
	if err := json.Unmarshal(raw, &r); err != nil {
		return RopeScaling{}, err
	}
	typ := r.RopeType
	if typ == "" {
		typ = r.Type
	}
	if typ != "llama3" {
		return RopeScaling{}, fmt.Errorf("rope_type %q: only \"llama3\" is supported", typ)
	}
	for _, f := range []struct {
		key string
		ok  bool
	}{{"factor", r.Factor != nil}, {"low_freq_factor", r.LowFreqFactor != nil}, {"high_freq_factor", r.HighFreqFactor != nil},
		{"original_max_position_embeddings", r.OriginalContext != nil}} {
		if !f.ok {
			return RopeScaling{}, fmt.Errorf("%s missing", f.key)
		}
	}
	s := RopeScaling{Type: typ, Factor: *r.Factor, LowFreqFactor: *r.LowFreqFactor, HighFreqFactor: *r.HighFreqFactor, OriginalContext: *r.OriginalContext}
	return s, s.validate()
}

// WriteHFConfig writes cfg as the config.json of its architecture (LlamaForCausalLM,
// Qwen2ForCausalLM or Qwen3ForCausalLM) that ConfigFromHF reads back to cfg (RopeLayout
// aside, which is always RopeHalfSplit there).
func WriteHFConfig(path string, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("hf config %s: %w", path, err)
	}
	modelType := cfg.Arch
	if modelType == "" {
		modelType = "llama"
	}
	out := map[string]any{
		"architectures":           []string{hfModelTypes[modelType].class},
		"model_type":              modelType,
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
	if s := cfg.RopeScaling; s.Type != "" {
		out["rope_scaling"] = map[string]any{"rope_type": s.Type, "factor": s.Factor, "low_freq_factor": s.LowFreqFactor,
			"high_freq_factor": s.HighFreqFactor, "original_max_position_embeddings": s.OriginalContext}
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
