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

// FuzzByteLevelRoundTrip: with the byte-level vocabs of every other pre-tokenizer (llama3,
// deepseek-llm, starcoder, falcon), Tokenize never fails or panics, with or without parsing
// special tokens, and Decode(Encode(s)) is s less the bytes the vocab has no token for
// (falcon lacks several control characters, starcoder 0xFF; llama.cpp drops them too).
// For deepseek-llm only where s is valid UTF-8: that vocab has user-defined tokens "ÿ",
// "þ", "ø", … in place of the byte tokens of 0xC0, 0xC1 and 0xF5–0xFF (bytes valid UTF-8
// never holds), so those bytes come back as the characters.
func FuzzByteLevelRoundTrip(f *testing.F) {
	type vocab struct {
		tok          *Tokenizer
		allBytesBack bool
	}
	var vocabs []vocab
	for _, file := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-deepseek-llm.gguf", "ggml-vocab-starcoder.gguf", "ggml-vocab-falcon.gguf"} {
		vocabs = append(vocabs, vocab{loadShared(f, "tokenizer", file), file != "ggml-vocab-deepseek-llm.gguf"})
		fuzzSeeds(f, file)
	}
	f.Add("<|begin_of_text|>ø\r\n 123456 ’x <fim_prefix>>>TITLE<<\v\x19")
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range vocabs {
			var kept []byte // s less the bytes without a token
			for i := 0; i < len(s); i++ {
				if v.tok.byteID[s[i]] >= 0 {
					kept = append(kept, s[i])
				}
			}
			want := string(kept)
			for _, parse := range []bool{false, true} {
				ids, err := v.tok.Tokenize(s, false, parse)
				if err != nil {
					t.Fatalf("%s: Tokenize(%q, parse %v): %v", v.tok, s, parse, err)
				}
				got, err := v.tok.Decode(ids)
				if err != nil {
					t.Fatalf("%s: Decode: %v", v.tok, err)
				}
				// parsed control tokens decode to nothing, so only plain text must come back
				if !parse && (v.allBytesBack || utf8.ValidString(s)) && got != want {
					t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q", v.tok, s, got, want)
				}
			}
		}
	})
}
