package tokenizer

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models/format"
)

// TestGGUFMetadataRoundTrip: a SentencePiece tokenizer written with GGUFMetadata reads back
// as the same vocabulary (pieces, types, specials, flags: the same ids and text for a
// sentence); a byte-level BPE one is refused with its name, since its merges are not kept.
func TestGGUFMetadataRoundTrip(t *testing.T) {
	want := synthetic(t, 600)
	meta, err := want.GGUFMetadata()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "vocab.gguf")
	require.NoError(t, format.WriteGGUF(p, append([]format.GGUFKV{{Key: "general.architecture", Value: "llama"}}, meta...), nil))
	got, err := FromGGUF(p)
	require.NoError(t, err)
	require.Equal(t, want.tokens, got.tokens)
	require.Equal(t, want.types, got.types)
	require.Equal(t, want.scores, got.scores)
	require.Equal(t, []int{want.BOS(), want.EOS(), want.unk}, []int{got.BOS(), got.EOS(), got.unk})
	text := "Hello, world: 42 ünïcode"
	wantIDs, err := want.Encode(text, true)
	require.NoError(t, err)
	gotIDs, err := got.Encode(text, true)
	require.NoError(t, err)
	require.Equal(t, wantIDs, gotIDs)

	bpe, err := FromGGUF(writeGGUF(t, "bpe.gguf",
		kv{"tokenizer.ggml.model", "gpt2"}, kv{"tokenizer.ggml.pre", "gpt-2"},
		kv{"tokenizer.ggml.tokens", []string{"a", "b", "ab"}}, kv{"tokenizer.ggml.merges", []string{"a b"}}))
	require.NoError(t, err)
	_, err = bpe.GGUFMetadata()
	require.ErrorContains(t, err, "bpe.gguf")
	require.ErrorContains(t, err, "only a SentencePiece vocabulary")
}
