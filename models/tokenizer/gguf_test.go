package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFromGGUFSynthetic loads spmVocab's GGUF and checks the fields it derives.
func TestFromGGUFSynthetic(t *testing.T) {
	tok, err := FromGGUF(writeGGUF(t, "spm.gguf", spmKVs()...))
	require.NoError(t, err)
	tokens, _, _ := spmVocab()
	require.Equal(t, SentencePiece, tok.Kind())
	require.Equal(t, len(tokens), tok.VocabSize())
	require.Equal(t, 1, tok.BOS())
	require.Equal(t, 2, tok.EOS())
	require.True(t, tok.AddsBOS(), "llama vocabs add BOS by default")
	require.False(t, tok.AddsEOS())
	for id, w := range tokens {
		require.Equal(t, w, tok.Piece(id), "id %d", id)
	}
	require.Equal(t, TypeUserDefined, tok.Type(265))
	require.Equal(t, TypeByte, tok.Type(3))
}

// TestFromGGUFKeepsWhiteSpace: vocab entries with leading or trailing white space survive
// loading (gguf-parser-go alone trims them; FromGGUF re-reads the bytes).
func TestFromGGUFKeepsWhiteSpace(t *testing.T) {
	tok, err := FromGGUF(writeGGUF(t, "spm.gguf", spmKVs()...))
	require.NoError(t, err)
	require.Equal(t, "\t\t", tok.Piece(266))
	require.Equal(t, "▁\u00a0", tok.Piece(267))
	ids, err := tok.Encode("\t\t", false)
	require.NoError(t, err)
	require.Equal(t, []int{259, 266}, ids) // "▁", "\t\t"

	llama := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	for id, want := range map[int]string{8655: "\u00a0\u00a0", 2104: ";\r", 3336: "▁{\r", 30004: "\r", 30358: "\u3000"} {
		require.Equal(t, want, llama.Piece(id), "id %d", id)
	}
	// CRLF line ends use the vocab's "…\r" tokens (with trimmed strings, "\r" would be a byte
	// token and ";\r" would not exist).
	for _, c := range []struct {
		text string
		want []int
	}{
		{"a;\r\n", []int{263, 2104, 13}},
		{"x {\r\n", []int{921, 3336, 13}},
		{"a\u00a0\u00a0b", []int{263, 8655, 29890}},
		{"\u3000", []int{29871, 30358}},
	} {
		ids, err := llama.Encode(c.text, false)
		require.NoError(t, err)
		require.Equal(t, c.want, ids, "%q", c.text)
	}
}

// TestFromGGUFFullModel loads the tokenizer of a full model file (with tensors) and checks
// llama.cpp's tokenization of the tiny model's prompt.
func TestFromGGUFFullModel(t *testing.T) {
	tok := loadShared(t, "llamacpp-tiny", "tiny-f32.gguf")
	require.Equal(t, 512, tok.VocabSize())
	ids, err := tok.Encode("Hello my name is", true)
	require.NoError(t, err)
	require.Equal(t, []int{1, 259, 299, 328, 424, 338, 366, 348, 367, 324, 412, 362, 342}, ids)
	// llama.cpp decodes the BOS to nothing and, since the BOS took the first position, keeps
	// the space of "▁Hello": the leading space is only stripped from the first token.
	text, err := tok.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, " Hello my name is", text)
	text, err = tok.Decode(ids[1:])
	require.NoError(t, err)
	require.Equal(t, "Hello my name is", text)
}

// TestFromGGUFErrors: each malformed or missing field gives an error that names the file
// and the field.
func TestFromGGUFErrors(t *testing.T) {
	base := spmKVs()
	tokens, _, _ := spmVocab()
	gpt2 := []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "gpt-2"},
		{"tokenizer.ggml.tokens", []string{"a", "b", "ab"}},
		{"tokenizer.ggml.merges", []string{"a b"}},
	}
	for _, c := range []struct {
		name string
		kvs  []kv
		want []string // substrings of the error
	}{
		{"tokens missing", without(base, "tokenizer.ggml.tokens"), []string{"tokenizer.ggml.tokens missing"}},
		{"tokens not strings", with(base, "tokenizer.ggml.tokens", []int32{1, 2}), []string{"tokenizer.ggml.tokens", "Int32"}},
		{"tokens empty", with(base, "tokenizer.ggml.tokens", []string{}), []string{"tokenizer.ggml.tokens is empty"}},
		{"model missing", without(base, "tokenizer.ggml.model"), []string{"tokenizer.ggml.model missing"}},
		{"model unsupported", with(base, "tokenizer.ggml.model", "bert"), []string{"tokenizer.ggml.model", `"bert"`}},
		{"model not a string", with(base, "tokenizer.ggml.model", uint32(1)), []string{"tokenizer.ggml.model holds Uint32"}},
		{"scores length", with(base, "tokenizer.ggml.scores", []float32{1, 2, 3}), []string{"tokenizer.ggml.scores has 3 elements", "tokenizer.ggml.tokens has"}},
		{"scores type", with(base, "tokenizer.ggml.scores", tokens), []string{"tokenizer.ggml.scores", "String"}},
		{"token types length", with(base, "tokenizer.ggml.token_type", []int32{1}), []string{"tokenizer.ggml.token_type has 1 elements"}},
		{"bos out of range", with(base, "tokenizer.ggml.bos_token_id", uint32(99999)), []string{"tokenizer.ggml.bos_token_id = 99999"}},
		{"eos not an integer", with(base, "tokenizer.ggml.eos_token_id", "two"), []string{"tokenizer.ggml.eos_token_id holds String"}},
		{"add_bos not a bool", with(base, "tokenizer.ggml.add_bos_token", uint32(1)), []string{"tokenizer.ggml.add_bos_token holds Uint32"}},
		{"merges missing", without(gpt2, "tokenizer.ggml.merges"), []string{"tokenizer.ggml.merges missing"}},
		{"merge malformed", with(gpt2, "tokenizer.ggml.merges", []string{"a b", "ab"}), []string{"tokenizer.ggml.merges[1]", `"ab"`}},
		{"pre missing", without(gpt2, "tokenizer.ggml.pre"), []string{"tokenizer.ggml.pre missing", "llama-bpe"}},
		{"pre unsupported", with(gpt2, "tokenizer.ggml.pre", "tekken"), []string{`tokenizer.ggml.pre "tekken" is not a supported pre-tokenizer type`, "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "falcon", "starcoder"}},
		{"pre not a string", with(gpt2, "tokenizer.ggml.pre", uint32(3)), []string{"tokenizer.ggml.pre holds Uint32"}},
		{"byte token malformed", with(base, "tokenizer.ggml.token_type", func() []int32 {
			_, _, types := spmVocab()
			types[len(types)-1] = int32(TypeByte)
			return types
		}()), []string{"has type byte"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeGGUF(t, "bad.gguf", c.kvs...)
			tok, err := FromGGUF(p)
			require.Error(t, err)
			require.Nil(t, tok)
			require.Contains(t, err.Error(), p)
			for _, w := range c.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "nope.gguf")
		_, err := FromGGUF(p)
		require.ErrorContains(t, err, p)
	})
	t.Run("not GGUF", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "x.gguf")
		require.NoError(t, os.WriteFile(p, []byte(`{"model": {}}`), 0o644))
		_, err := FromGGUF(p)
		require.ErrorContains(t, err, p)
	})
	t.Run("truncated", func(t *testing.T) {
		p := writeGGUF(t, "spm.gguf", spmKVs()...)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, data[:len(data)/2], 0o644))
		_, err = FromGGUF(p)
		require.ErrorContains(t, err, p)
	})
}

// TestFromGGUFDefaults: a llama vocab without the optional keys gets llama.cpp's defaults.
func TestFromGGUFDefaults(t *testing.T) {
	kvs := without(without(without(spmKVs(), "tokenizer.ggml.bos_token_id"), "tokenizer.ggml.eos_token_id"), "tokenizer.ggml.scores")
	tok, err := FromGGUF(writeGGUF(t, "spm.gguf", kvs...))
	require.NoError(t, err)
	require.Equal(t, 1, tok.BOS())
	require.Equal(t, 2, tok.EOS())
	require.True(t, tok.AddsBOS())

	tok, err = FromGGUF(writeGGUF(t, "spm.gguf", with(with(spmKVs(), "tokenizer.ggml.add_bos_token", false), "tokenizer.ggml.add_eos_token", true)...))
	require.NoError(t, err)
	ids, err := tok.Encode("a", true)
	require.NoError(t, err)
	require.Equal(t, []int{262, 2}, ids) // "▁a", EOS

	tok, err = FromGGUF(writeGGUF(t, "spm.gguf", with(spmKVs(), "tokenizer.ggml.add_space_prefix", false)...))
	require.NoError(t, err)
	ids, err = tok.Encode("a", false)
	require.NoError(t, err)
	require.Equal(t, []int{260}, ids) // "a", no "▁"
}
