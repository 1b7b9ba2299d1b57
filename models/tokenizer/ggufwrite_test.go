package tokenizer

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models/format"
)

// kv is one GGUF metadata entry for writeGGUF: a value of a type format.GGUFKV lists.
type kv struct {
	key string
	val any
}

// writeGGUF writes a vocab-only GGUF file (no tensors) holding kvs and returns its path.
func writeGGUF(t testing.TB, name string, kvs ...kv) string {
	t.Helper()
	meta := make([]format.GGUFKV, len(kvs))
	for i, e := range kvs {
		meta[i] = format.GGUFKV{Key: e.key, Value: e.val}
	}
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, format.WriteGGUF(p, meta, nil))
	return p
}

// spmVocab is a small SentencePiece vocab: <unk>, <s>, </s>, the 256 byte tokens, then
// pieces with scores −rank, a user-defined "<tool>" and a piece with surrounding white space.
func spmVocab() (tokens []string, scores []float32, types []int32) {
	tokens = []string{"<unk>", "<s>", "</s>"}
	types = []int32{int32(TypeUnknown), int32(TypeControl), int32(TypeControl)}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, int32(TypeByte))
	}
	for _, p := range []string{"▁", "a", "b", "▁a", "ab", "▁ab", "<tool>", "\t\t", "▁\u00a0"} {
		tokens = append(tokens, p)
		typ := TypeNormal
		if p == "<tool>" {
			typ = TypeUserDefined
		}
		types = append(types, int32(typ))
	}
	scores = make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}
	return tokens, scores, types
}

// spmKVs are the metadata of spmVocab's GGUF file.
func spmKVs() []kv {
	tokens, scores, types := spmVocab()
	return []kv{
		{"general.architecture", "llama"},
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
	}
}

// without returns kvs less the entry named key.
func without(kvs []kv, key string) []kv {
	var out []kv
	for _, e := range kvs {
		if e.key != key {
			out = append(out, e)
		}
	}
	return out
}

// with returns kvs with key set to val (replaced or appended).
func with(kvs []kv, key string, val any) []kv {
	return append(without(kvs, key), kv{key, val})
}
