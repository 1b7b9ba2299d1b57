package tokenizer

import (
	"fmt"

	"github.com/tpslice/tpslice/models/format"
)

// GGUFMetadata returns the tokenizer.ggml.* entries that FromGGUF (and llama.cpp) read this
// SentencePiece tokenizer back from: its pieces, scores and token types, the BOS, EOS and
// unknown ids and the add-BOS/EOS and space-prefix flags. A model file written with them
// (models.WriteGGUF) runs in llama.cpp with the tokens tpslice gives it. Byte-level BPE
// vocabularies are refused: their merges are not kept once loaded.
func (t *Tokenizer) GGUFMetadata() ([]format.GGUFKV, error) {
	if t.kind != SentencePiece {
		return nil, fmt.Errorf("tokenizer: %s: only a SentencePiece vocabulary is written as GGUF metadata, not %v", t.source, t.kind)
	}
	types := make([]int32, len(t.types))
	for i, typ := range t.types {
		types[i] = int32(typ)
	}
	kvs := []format.GGUFKV{
		{Key: keyModel, Value: "llama"},
		{Key: keyTokens, Value: t.tokens},
		{Key: keyScores, Value: t.scores},
		{Key: keyTokenType, Value: types},
		{Key: keyAddBOS, Value: t.addBOS},
		{Key: keyAddEOS, Value: t.addEOS},
		{Key: keyAddSpacePfx, Value: t.addSpacePrefix},
	}
	for _, id := range []struct {
		key string
		id  int
	}{{keyBOS, t.bos}, {keyEOS, t.eos}, {keyUNK, t.unk}} {
		if id.id >= 0 {
			kvs = append(kvs, format.GGUFKV{Key: id.key, Value: uint32(id.id)})
		}
	}
	return kvs, nil
}
