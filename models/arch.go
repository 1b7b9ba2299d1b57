package models

import (
	"fmt"
	"sort"
	"strings"
)

// Arch is what sets a member of the Llama family apart from Llama 2, as data: the optional
// tensors of its layers and how its GGUF files lay out RoPE. The decoder reads these
// fields; it has no per-architecture code paths (llama.cpp keeps the same facts in the
// tables of llama-arch.cpp).
type Arch struct {
	// Name is GGUF's general.architecture, the prefix of the file's metadata keys.
	Name string
	// QKVBias: the q, k and v projections carry biases (blk.N.attn_{q,k,v}.bias), split
	// with their rows on column-parallel shards (Qwen2).
	QKVBias bool
	// QKNorm: q and k are RMS-normalized per head before RoPE, by weights of HeadDim
	// (blk.N.attn_{q,k}_norm.weight) with the model's ε (Qwen3).
	QKNorm bool
	// GGUFRope is the RoPE pairing of Q and K in the architecture's GGUF files: llama.cpp's
	// converter permutes Llama's rows to rotate adjacent pairs, and leaves Qwen's halves
	// (its NEOX RoPE type).
	GGUFRope RopeLayout
}

// archs are the architectures the decoder runs, by GGUF name; never written. A Llama 3.1
// checkpoint is "llama" with an optional rope_freqs.weight (RopeFreqs); Mistral's GGUF
// files are "llama" too.
var archs = map[string]Arch{
	"llama": {Name: "llama", GGUFRope: RopeAdjacentPairs},
	"qwen2": {Name: "qwen2", QKVBias: true, GGUFRope: RopeHalfSplit},
	"qwen3": {Name: "qwen3", QKNorm: true, GGUFRope: RopeHalfSplit},
}

// LookupArch returns the architecture GGUF calls name, or an error listing the known ones.
func LookupArch(name string) (Arch, error) {
	if a, ok := archs[name]; ok {
		return a, nil
	}
	return Arch{}, fmt.Errorf("architecture %q is not supported (supported: %s)", name, knownArchs())
}

// knownArchs lists the supported architectures' names, quoted, in order.
func knownArchs() string {
	known := make([]string, 0, len(archs))
	for n := range archs {
		known = append(known, fmt.Sprintf("%q", n))
	}
	sort.Strings(known)
	return strings.Join(known, ", ")
}
