package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tokenizerTestdata returns a path under the shared test data, skipping the test when it is
// absent.
func tokenizerTestdata(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{"..", "..", "..", "shared", "testdata"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data %s is absent (it lives in ../shared next to the repository): %v", p, err)
	}
	return p
}

func runTokenize(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(append([]string{"tokenize"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestTokenizeText(t *testing.T) {
	spm := tokenizerTestdata(t, "tokenizer", "ggml-vocab-llama-spm.gguf")
	gpt2 := tokenizerTestdata(t, "tokenizer", "ggml-vocab-gpt-2.gguf")
	tiny := tokenizerTestdata(t, "llamacpp-tiny", "tiny-f32.gguf")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"spm with BOS", []string{"--model", spm, "Hello world"}, "ids: 1 15043 3186\npieces: \"<s>\" \"▁Hello\" \"▁world\"\n"},
		{"spm without BOS", []string{"--model", spm, "--no-bos", "Hello world"}, "ids: 15043 3186\npieces: \"▁Hello\" \"▁world\"\n"},
		{"spm newline", []string{"--no-bos", "--model", spm, "\n"}, "ids: 29871 13\npieces: \"▁\" \"<0x0A>\"\n"},
		{"gpt2 adds no BOS", []string{"--model", gpt2, "Hello world"}, "ids: 15496 995\npieces: \"Hello\" \"Ġworld\"\n"},
		{"full model file", []string{"-model", tiny, "Hello my name is"}, "ids: 1 259 299 328 424 338 366 348 367 324 412 362 342\n"},
		{"empty text", []string{"--model", spm, ""}, "ids: 1\npieces: \"<s>\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := runTokenize(t, c.args...)
			require.NoError(t, err)
			if c.name == "full model file" {
				require.Contains(t, out, c.want)
				return
			}
			require.Equal(t, c.want, out)
		})
	}
}

func TestTokenizeJSON(t *testing.T) {
	gpt2 := tokenizerTestdata(t, "tokenizer", "ggml-vocab-gpt-2.gguf")
	out, _, err := runTokenize(t, "--model", gpt2, "--json", "Hello world<|endoftext|>")
	require.NoError(t, err)
	var rep tokenizeReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, []int{15496, 995, 27, 91, 437, 1659, 5239, 91, 29}, rep.IDs, "special-token text is not parsed")
	require.Len(t, rep.Pieces, len(rep.IDs))
	require.Equal(t, "Ġworld", rep.Pieces[1])
	require.Contains(t, out, `"<"`, "no HTML escaping")
}

// TestTokenizeHFJSON runs the command on a small tokenizer.json.
func TestTokenizeHFJSON(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, os.WriteFile(p, []byte(`{
		"added_tokens": [{"id": 5, "content": "<|endoftext|>", "special": true}],
		"normalizer": null,
		"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"model": {"type": "BPE", "vocab": {"h": 0, "i": 1, "Ġ": 2, "hi": 3, "Ġhi": 4},
		          "merges": ["h i", "Ġ hi"]}
	}`), 0o644))
	for _, path := range []string{p, dir} {
		out, _, err := runTokenize(t, "--model", path, "hi hi")
		require.NoError(t, err)
		require.Equal(t, "ids: 3 4\npieces: \"hi\" \"Ġhi\"\n", out)
	}
}

// TestTokenizeModels: tokenize takes what generate takes: the embedded stories260K by
// default (run.c's ids for its prompt) and the presets.
func TestTokenizeModels(t *testing.T) {
	out, _, err := runTokenize(t, "Once upon a time")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "ids: 1 403 407 261 378\n"), out)
	out, _, err = runTokenize(t, "--model", "demo", "--json", "Hello")
	require.NoError(t, err)
	require.Contains(t, out, `"ids":[`)
}

// TestTokenizeErrors: bad arguments are errors that say what is wrong (the arguments are
// checked before the vocab file is opened, so these need no test data).
func TestTokenizeErrors(t *testing.T) {
	spm := filepath.Join(t.TempDir(), "vocab.gguf")
	notTok := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notTok, []byte("hello"), 0o644))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown preset", []string{"--model", "gpt-9", "hello"}, `model "gpt-9" is not a file, a directory or a built-in model (stories260K, the default`},
		{"no text", []string{"--model", spm}, "no TEXT given"},
		{"two texts", []string{"--model", spm, "hello", "world"}, "want one TEXT argument, got 2"},
		{"flag after text", []string{"--model", spm, "hello", "--json"}, "put flags before it"},
		{"missing file", []string{"--model", filepath.Join(t.TempDir(), "nope.gguf"), "hello"}, "nope.gguf"},
		{"not a vocab", []string{"--model", notTok, "hello"}, "neither a GGUF file nor a tokenizer.json"},
		{"unknown flag", []string{"--modle", spm, "hello"}, "flag provided but not defined"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runTokenize(t, c.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}
