package models

import (
	"fmt"
	"strings"
)

// presets returns the built-in configs, fresh on each call (no package-level state).
func presets() []Config {
	llama := func(name string, hidden, ffn, layers, heads, kv, vocab int, theta float64, ctx int) Config {
		return Config{
			Name: name, Hidden: hidden, Intermediate: ffn, Layers: layers, Heads: heads,
			KVHeads: kv, HeadDim: hidden / heads, Vocab: vocab, RopeTheta: theta,
			RMSEps: 1e-5, ContextLength: ctx, RopeLayout: RopeHalfSplit,
		}
	}
	medium := llama("medium", 2048, 5632, 8, 16, 8, 16384, 10000, 2048)
	medium.TiedEmbeddings = true
	return []Config{
		// tiny: for tests; every dimension small, GQA 2:1, untied head.
		llama("tiny", 64, 192, 2, 8, 4, 512, 10000, 256),
		// demo: the embedded default, fast at TP = 8 on 2 cores (8 heads, 8 KV heads).
		llama("demo", 512, 1536, 4, 8, 8, 4096, 10000, 1024),
		// medium: about 411M parameters (8 blocks of 47.2M, plus a tied 16384 × 2048
		// embedding); TinyLlama's block shape.
		medium,
		// The published Hugging Face config.json shapes.
		llama("llama-2-7b", 4096, 11008, 32, 32, 32, 32000, 10000, 4096),
		llama("llama-2-70b", 8192, 28672, 80, 64, 8, 32000, 10000, 4096),
		llama("llama-3-8b", 4096, 14336, 32, 32, 8, 128256, 500000, 8192),
		llama("llama-3-70b", 8192, 28672, 80, 64, 8, 128256, 500000, 8192),
	}
}

// Presets lists the names Preset knows: tiny, demo, medium, llama-2-7b, llama-2-70b,
// llama-3-8b, llama-3-70b. Their RopeLayout is RopeHalfSplit, the layout of the Hugging
// Face checkpoints they describe.
func Presets() []string {
	ps := presets()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// Preset returns the config of a named preset (case-insensitive); the error lists the
// known names.
func Preset(name string) (Config, error) {
	for _, p := range presets() {
		if strings.EqualFold(p.Name, strings.TrimSpace(name)) {
			return p, nil
		}
	}
	return Config{}, fmt.Errorf("models: unknown preset %q (known: %s)", name, strings.Join(Presets(), ", "))
}
