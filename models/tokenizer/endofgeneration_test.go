package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndOfGeneration: the Llama 3 vocab ends on <|end_of_text|> (its EOS), <|eom_id|> and
// <|eot_id|>, not on <|begin_of_text|>; the Llama 2 vocab on </s> alone.
func TestEndOfGeneration(t *testing.T) {
	llama3 := loadShared(t, "tokenizer", "ggml-vocab-llama-bpe.gguf")
	require.Equal(t, []int{128001, 128008, 128009}, llama3.EndOfGeneration())
	llama2 := loadShared(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	require.Equal(t, []int{llama2.EOS()}, llama2.EndOfGeneration())
	syn, err := Synthetic(512)
	require.NoError(t, err)
	require.Equal(t, []int{syn.EOS()}, syn.EndOfGeneration())
}
