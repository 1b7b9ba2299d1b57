package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// qwenStyleTokenizer writes a small byte-level BPE tokenizer.json with Qwen's special
// tokens and loads it.
func qwenStyleTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, os.WriteFile(p, []byte(`{
		"added_tokens": [
			{"id": 5, "content": "<|endoftext|>", "special": true},
			{"id": 6, "content": "<|im_start|>", "special": true},
			{"id": 7, "content": "<|im_end|>", "special": true}],
		"normalizer": null,
		"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"model": {"type": "BPE", "vocab": {"h": 0, "i": 1, "Ġ": 2, "hi": 3, "Ġhi": 4}, "merges": ["h i", "Ġ hi"]}
	}`), 0o644))
	tok, err := tokenizer.Load(p)
	require.NoError(t, err)
	return tok
}

// TestEndOfGenerationIDs: the set holds EOS and every end-of-turn token the vocabulary
// has, as llama.cpp's EOG set, and not the other control tokens.
func TestEndOfGenerationIDs(t *testing.T) {
	qwen := qwenStyleTokenizer(t)
	require.Equal(t, map[int32]bool{5: true, 7: true}, endOfGeneration(qwen, nil), "<|endoftext|> and <|im_end|>, not <|im_start|>")
	require.Equal(t, map[int32]bool{3: true, 5: true, 7: true}, endOfGeneration(qwen, []int{3, 99, -1}),
		"a model file's ids join; ids outside the vocabulary do not")

	syn, err := tokenizer.Synthetic(512)
	require.NoError(t, err)
	require.Equal(t, map[int32]bool{int32(syn.EOS()): true}, endOfGeneration(syn, nil), "the presets end on EOS only")

	llama3 := "../../shared/testdata/tokenizer/ggml-vocab-llama-bpe.gguf"
	if _, err := os.Stat(llama3); err != nil {
		t.Skipf("the Llama 3 vocab of the shared test data is absent (%v)", err)
	}
	gf, err := format.ParseGGUF(llama3)
	require.NoError(t, err)
	tok, err := tokenizer.FromGGUFFile(llama3, gf)
	require.NoError(t, err)
	set := endOfGeneration(tok, nil)
	for id, text := range map[int32]string{128001: "<|end_of_text|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>"} {
		require.Equal(t, text, tok.Piece(int(id)))
		require.True(t, set[id], "%s ends a generation", text)
	}
	require.False(t, set[128000], "<|begin_of_text|> does not")
	require.False(t, set[128006], "<|start_header_id|> does not")
}

// TestGenerationConfigEOS reads vLLM's stop ids from a Hugging Face directory.
func TestGenerationConfigEOS(t *testing.T) {
	dir := t.TempDir()
	ids, err := generationConfigEOS(filepath.Join(dir, "generation_config.json"))
	require.NoError(t, err)
	require.Empty(t, ids, "no generation_config.json")
	write := func(s string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(s), 0o644))
	}
	write(`{"eos_token_id": [128001, 128008, 128009]}`)
	ids, err = generationConfigEOS(filepath.Join(dir, "generation_config.json"))
	require.NoError(t, err)
	require.Equal(t, []int{128001, 128008, 128009}, ids)
	write(`{"eos_token_id": 151645}`)
	ids, err = generationConfigEOS(filepath.Join(dir, "generation_config.json"))
	require.NoError(t, err)
	require.Equal(t, []int{151645}, ids)
	write(`{"eos_token_id": "x"}`)
	_, err = generationConfigEOS(filepath.Join(dir, "generation_config.json"))
	require.ErrorContains(t, err, "eos_token_id must be a token id or a list")
}

// TestDeliverStopsAtEndOfTurn: an end-of-turn id ends the sequence with "stop"; it counts
// as output but adds no text.
func TestDeliverStopsAtEndOfTurn(t *testing.T) {
	tok := qwenStyleTokenizer(t)
	e := &Engine{tok: tok, endOfGeneration: endOfGeneration(tok, nil)}
	s := &sequence{limit: 10, out: newOutput(tok.NewStream(), nil, false), tokens: make(chan Token, 11)}
	e.deliver(s, 4, nil) // "Ġhi"
	require.False(t, s.done)
	e.deliver(s, 7, nil) // <|im_end|>
	require.True(t, s.done)
	require.Equal(t, FinishStop, s.result.FinishReason)
	require.Equal(t, []int32{4, 7}, s.result.OutputIDs)
	close(s.tokens)
	var got []Token
	for tok := range s.tokens {
		got = append(got, tok)
	}
	require.Equal(t, []Token{{ID: 4, Text: " hi"}}, got, "the end of turn is not streamed")
}

// TestGenerateStopsAtEndOfTurn runs a real generation that meets an id of the set.
func TestGenerateStopsAtEndOfTurn(t *testing.T) {
	e, err := New(Config{Model: "tiny", TP: 2})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	req := Request{Prompt: "Hello my name is", MaxTokens: 8}
	full, err := e.Generate(context.Background(), req, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, FinishLength, full.FinishReason)
	cut := 2
	for cut > 0 && full.OutputIDs[cut-1] == full.OutputIDs[cut] {
		cut-- // the first occurrence of the id is where it stops
	}
	end := full.OutputIDs[cut]

	e.endOfGeneration[end] = true // as if the vocabulary's end of turn were this id
	res, err := e.Generate(context.Background(), req, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, FinishStop, res.FinishReason)
	require.Equal(t, full.OutputIDs[:cut+1], res.OutputIDs, "the end token counts as output")
	want := ""
	if cut > 0 {
		before, err := e.Generate(context.Background(), Request{Prompt: req.Prompt, MaxTokens: cut}, func(Token) error { return nil })
		require.NoError(t, err)
		want = before.Text
	}
	require.Equal(t, want, res.Text, "the end token adds no text")
}
