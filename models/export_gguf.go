package models

import (
	"fmt"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/models/format"
)

// ExportGGUF writes the model src holds (cfg's shape; Q and K rows stored for
// cfg.RopeLayout) as a GGUF file that llama.cpp runs as the same model: every matrix stored
// as t (an element type, or a block type the writer quantizes to) and every vector (the
// norms) as f32, as convert_hf_to_gguf keeps them, Q and K rows moved to
// the adjacent-pairs layout GGUF readers assume where cfg stores them half-split (as
// convert_hf_to_gguf does), and the extra metadata, such as a tokenizer's
// (tokenizer.GGUFMetadata). It is how a preset's deterministic weights reach llama.cpp for a
// side-by-side measurement on the same bytes.
func ExportGGUF(path string, cfg Config, src format.Source, t dtype.DType, extra ...format.GGUFKV) error {
	ts, err := format.ReadAll(src, dtype.F32) // rounded to t once, by the writer
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	for i := range ts {
		if len(ts[i].Info.Shape) > 1 {
			ts[i].Info.DType = t
		}
		_, kind, ok := ParseLayerTensorName(ts[i].Info.Name)
		heads := map[string]int{AttnQ: cfg.Heads, AttnK: cfg.KVHeads}[kind]
		if !ok || heads == 0 || cfg.RopeLayout != RopeHalfSplit {
			continue
		}
		if ts[i].Data, err = PermuteQKToAdjacent(ts[i].Data, heads, cfg.HeadDim, cfg.Hidden); err != nil {
			return fmt.Errorf("gguf %s: %s: %w", path, ts[i].Info.Name, err)
		}
	}
	return WriteGGUF(path, cfg, ts, extra...)
}
