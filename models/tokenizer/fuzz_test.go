package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds adds llama.cpp's suite inputs to the corpus.
func fuzzSeeds(f *testing.F, file string) {
	for _, c := range loadSuite(f, file) {
		f.Add(c.in)
	}
	f.Add("\xff\xfe<|endoftext|><s>")
}

// streamText feeds ids one at a time and joins the chunks, failing on invalid UTF-8.
func streamText(t *testing.T, tok *Tokenizer, ids []int) string {
	st := tok.NewStream()
	var b strings.Builder
	for _, id := range ids {
		chunk := st.Add(id)
		if !utf8.ValidString(chunk) {
			t.Fatalf("stream chunk %q is not valid UTF-8", chunk)
		}
		b.WriteString(chunk)
	}
	b.WriteString(st.Flush())
	return b.String()
}

// FuzzGPT2RoundTrip: with the GPT-2 vocab, Encode never fails or panics, Decode(Encode(s))
// is s for any input (byte-level BPE is lossless, valid UTF-8 or not), and the stream
// reproduces it when it is valid UTF-8.
func FuzzGPT2RoundTrip(f *testing.F) {
	tok := loadShared(f, "tokenizer", "ggml-vocab-gpt-2.gguf")
	fuzzSeeds(f, "ggml-vocab-gpt-2.gguf")
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := tok.Encode(s, true)
		if err != nil {
			t.Fatalf("Encode(%q): %v", s, err)
		}
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		if utf8.ValidString(s) {
			if st := streamText(t, tok, ids); st != s {
				t.Fatalf("stream of %q gives %q", s, st)
			}
		}
	})
}

// FuzzSPMRoundTrip: with the Llama vocab, Encode never fails or panics, and
// Decode(Encode(s)) is s unless s holds "▁" (which encodes like a space and so decodes to
// one).
func FuzzSPMRoundTrip(f *testing.F) {
	tok := loadShared(f, "tokenizer", "ggml-vocab-llama-spm.gguf")
	fuzzSeeds(f, "ggml-vocab-llama-spm.gguf")
	f.Fuzz(func(t *testing.T, s string) {
		requireRoundTrip(t, tok, s)
	})
}

// requireRoundTrip checks that Encode takes s, that Decode gives s back with "▁" read as a
// space (it encodes like one), and that the stream decoder agrees where s is valid UTF-8.
func requireRoundTrip(t *testing.T, tok *Tokenizer, s string) {
	t.Helper()
	ids, err := tok.Encode(s, false)
	if err != nil {
		t.Fatalf("Encode(%q): %v", s, err)
	}
	got, err := tok.Decode(ids)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := strings.ReplaceAll(s, "▁", " ")
	if got != want {
		t.Fatalf("Decode(Encode(%q)) = %q", s, got)
	}
	if utf8.ValidString(s) {
		if st := streamText(t, tok, ids); st != want {
			t.Fatalf("stream of %q gives %q", s, st)
		}
	}
}
