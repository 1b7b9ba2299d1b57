package tokenizer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// kv is one GGUF metadata entry for writeGGUF. Values: string, bool, uint32, int32,
// float32, []string, []float32, []int32.
type kv struct {
	key string
	val any
}

// writeGGUF writes a vocab-only GGUF v3 file (no tensors) holding kvs and returns its path.
func writeGGUF(t testing.TB, name string, kvs ...kv) string {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	str := func(s string) {
		_ = binary.Write(&b, le, uint64(len(s)))
		b.WriteString(s)
	}
	b.WriteString("GGUF")
	_ = binary.Write(&b, le, uint32(3))
	_ = binary.Write(&b, le, uint64(0))
	_ = binary.Write(&b, le, uint64(len(kvs)))
	for _, e := range kvs {
		str(e.key)
		switch v := e.val.(type) {
		case string:
			_ = binary.Write(&b, le, uint32(8))
			str(v)
		case bool:
			_ = binary.Write(&b, le, uint32(7))
			_ = binary.Write(&b, le, v)
		case uint32:
			_ = binary.Write(&b, le, uint32(4))
			_ = binary.Write(&b, le, v)
		case int32:
			_ = binary.Write(&b, le, uint32(5))
			_ = binary.Write(&b, le, v)
		case float32:
			_ = binary.Write(&b, le, uint32(6))
			_ = binary.Write(&b, le, v)
		case []string:
			_ = binary.Write(&b, le, uint32(9))
			_ = binary.Write(&b, le, uint32(8))
			_ = binary.Write(&b, le, uint64(len(v)))
			for _, s := range v {
				str(s)
			}
		case []float32:
			_ = binary.Write(&b, le, uint32(9))
			_ = binary.Write(&b, le, uint32(6))
			_ = binary.Write(&b, le, uint64(len(v)))
			_ = binary.Write(&b, le, v)
		case []int32:
			_ = binary.Write(&b, le, uint32(9))
			_ = binary.Write(&b, le, uint32(5))
			_ = binary.Write(&b, le, uint64(len(v)))
			_ = binary.Write(&b, le, v)
		default:
			t.Fatalf("writeGGUF: %s: unsupported value type %T", e.key, e.val)
		}
	}
	for b.Len()%32 != 0 { // pad the header to the default alignment
		b.WriteByte(0)
	}
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o644))
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
