package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// TestBytesAsText: --printable-bytes leaves no byte token, retypes exactly the byte tokens
// as normal ones and keeps their pieces; a vocabulary without token types is refused.
func TestBytesAsText(t *testing.T) {
	tok, err := engine.LoadTokenizer("medium")
	require.NoError(t, err)
	meta, err := tok.GGUFMetadata()
	require.NoError(t, err)
	before := typesOf(t, meta)
	pieces := append([]string(nil), valueOf(t, meta, "tokenizer.ggml.tokens").([]string)...)

	require.NoError(t, bytesAsText(meta))
	after := typesOf(t, meta)
	bytesSeen := 0
	for i, typ := range before {
		if typ == int32(tokenizer.TypeByte) {
			bytesSeen++
			require.Equal(t, int32(tokenizer.TypeNormal), after[i], "token %d (%s)", i, pieces[i])
			continue
		}
		require.Equal(t, typ, after[i], "token %d (%s) is no byte token", i, pieces[i])
	}
	require.Equal(t, 256, bytesSeen, "the vocabulary's byte tokens")
	require.Equal(t, pieces, valueOf(t, meta, "tokenizer.ggml.tokens"), "the pieces stay")

	err = bytesAsText([]format.GGUFKV{{Key: "tokenizer.ggml.tokens", Value: pieces}})
	require.ErrorContains(t, err, "tokenizer.ggml.token_type")
}

func typesOf(t *testing.T, meta []format.GGUFKV) []int32 {
	return append([]int32(nil), valueOf(t, meta, "tokenizer.ggml.token_type").([]int32)...)
}

func valueOf(t *testing.T, meta []format.GGUFKV, key string) any {
	t.Helper()
	for _, kv := range meta {
		if kv.Key == key {
			return kv.Value
		}
	}
	t.Fatalf("no %s", key)
	return nil
}
