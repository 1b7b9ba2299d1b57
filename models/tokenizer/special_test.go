package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseSpecialLlama3: with parse_special, control-token text becomes the tokens; without
// it, the same text is tokenized as plain text and decodes back to itself.
func TestParseSpecialLlama3(t *testing.T) {
	tok := loadShared(t, "tokenizer", "ggml-vocab-llama-bpe.gguf")
	require.Equal(t, "llama3", tok.PreTokenizer())
	const bot, eot, startHeader, endHeader, hello = 128000, 128009, 128006, 128007, 9906
	text := "<|begin_of_text|>Hello<|eot_id|>"

	ids, err := tok.Tokenize(text, false, true)
	require.NoError(t, err)
	require.Equal(t, []int{bot, hello, eot}, ids)

	ids, err = tok.Tokenize(text, true, true)
	require.NoError(t, err)
	require.Equal(t, []int{bot, bot, hello, eot}, ids, "llama.cpp keeps both BOS (and warns)")

	ids, err = tok.Encode(text, false)
	require.NoError(t, err)
	require.NotContains(t, ids, bot)
	require.NotContains(t, ids, eot)
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, text, back)

	ids, err = tok.Tokenize("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|eot_id|>", false, true)
	require.NoError(t, err)
	require.Equal(t, startHeader, ids[0])
	require.Equal(t, endHeader, ids[2])
	require.Equal(t, []int{eot, eot}, ids[len(ids)-2:])
	require.Equal(t, "user", tok.Piece(ids[1]))

	back, err = tok.Decode([]int{bot, hello, eot})
	require.NoError(t, err)
	require.Equal(t, "Hello", back, "control tokens decode to nothing")
}

// TestParseSpecialSentencePiece: <s>, </s> and <unk> are parsed too, and the text after a
// parsed token gets SentencePiece's space prefix again (llama.cpp's is_prev_special).
func TestParseSpecialSentencePiece(t *testing.T) {
	tok := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	require.Empty(t, tok.PreTokenizer())
	hello, err := tok.Encode("Hello", false)
	require.NoError(t, err)
	require.Equal(t, []int{15043}, hello) // "▁Hello"

	ids, err := tok.Tokenize("<s>Hello</s><unk>", false, true)
	require.NoError(t, err)
	require.Equal(t, []int{1, 15043, 2, 0}, ids)

	ids, err = tok.Tokenize("<s>Hello", true, true)
	require.NoError(t, err)
	require.Equal(t, []int{1, 1, 15043}, ids)

	plain, err := tok.Tokenize("<s>Hello", false, false)
	require.NoError(t, err)
	require.NotContains(t, plain, 1)
}

// TestParseSpecialLongestFirst: of overlapping special tokens the longest wins, and
// user-defined tokens are matched with or without parse_special.
func TestParseSpecialLongestFirst(t *testing.T) {
	falcon := loadShared(t, "tokenizer", "ggml-vocab-falcon.gguf")
	ids, err := falcon.Tokenize("x>>TITLE<<y<|endoftext|>", false, true)
	require.NoError(t, err)
	require.Equal(t, 0, ids[1], ">>TITLE<< is control token 0")
	require.Equal(t, 11, ids[len(ids)-1])

	deepseek := loadShared(t, "tokenizer", "ggml-vocab-deepseek-llm.gguf")
	require.Equal(t, "deepseek-llm", deepseek.PreTokenizer())
	require.Equal(t, TypeUserDefined, deepseek.Type(100002))
	for _, parse := range []bool{false, true} {
		ids, err := deepseek.Tokenize("aøb", false, parse)
		require.NoError(t, err)
		require.Contains(t, ids, 100002, "the user-defined ø is split out (parse_special %v)", parse)
	}

	tok, err := FromGGUF(writeGGUF(t, "bpe.gguf",
		kv{"tokenizer.ggml.model", "gpt2"},
		kv{"tokenizer.ggml.pre", "qwen2"},
		kv{"tokenizer.ggml.tokens", []string{"a", "<", ">", "<|im|>", "<|im|>a"}},
		kv{"tokenizer.ggml.token_type", []int32{1, 1, 1, int32(TypeControl), int32(TypeControl)}},
		kv{"tokenizer.ggml.merges", []string{"< >"}},
	))
	require.NoError(t, err)
	ids, err = tok.Tokenize("<|im|>a<|im|>a<|im|>", false, true)
	require.NoError(t, err)
	require.Equal(t, []int{4, 4, 3}, ids, "<|im|>a before <|im|>")
}

// TestPreTypeDefaults: the llama3 pre-tokenizer adds BOS unless the vocab says otherwise,
// and takes a pre-token that is a vocab entry as that token (ignore_merges); dbrx-style
// types share the regex but neither default.
func TestPreTypeDefaults(t *testing.T) {
	kvs := []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.tokens", []string{"a", "b", "c", "bc", "abc", "<|begin_of_text|>"}},
		{"tokenizer.ggml.token_type", []int32{1, 1, 1, 1, 1, int32(TypeControl)}},
		{"tokenizer.ggml.merges", []string{"b c"}},
		{"tokenizer.ggml.bos_token_id", uint32(5)},
	}
	for _, c := range []struct {
		pre  string
		kvs  []kv
		want []int
	}{
		{"llama-bpe", nil, []int{5, 4}}, // BOS, "abc" whole
		{"llama3", []kv{{"tokenizer.ggml.add_bos_token", false}}, []int{4}},
		{"smaug-bpe", nil, []int{0, 3}}, // no BOS; a + bc by the merges
		{"gpt-2", []kv{{"tokenizer.ggml.add_bos_token", true}}, []int{5, 0, 3}},
	} {
		t.Run(c.pre, func(t *testing.T) {
			all := append(with(kvs, "tokenizer.ggml.pre", c.pre), c.kvs...)
			tok, err := FromGGUF(writeGGUF(t, "bpe.gguf", all...))
			require.NoError(t, err)
			ids, err := tok.Encode("abc", true)
			require.NoError(t, err)
			require.Equal(t, c.want, ids)
		})
	}
}
