package tokenizer

import (
	"strings"
	"testing"
)

// BenchmarkEncode encodes llama.cpp's whole suite per iteration, per vocab.
//
//	go test -run '^$' -bench . ./models/tokenizer/
func BenchmarkEncode(b *testing.B) {
	for _, s := range suites {
		b.Run(s.file, func(b *testing.B) {
			tok := loadShared(b, "tokenizer", s.file)
			cases := loadSuite(b, s.file)
			n := 0
			for _, c := range cases {
				n += len(c.in)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, c := range cases {
					if _, err := tok.Encode(c.in, false); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkEncodeLong encodes one long text (the suite, concatenated 20 times) per iteration.
func BenchmarkEncodeLong(b *testing.B) {
	for _, s := range suites {
		b.Run(s.file, func(b *testing.B) {
			tok := loadShared(b, "tokenizer", s.file)
			var sb strings.Builder
			for range 20 {
				for _, c := range loadSuite(b, s.file) {
					sb.WriteString(c.in)
					sb.WriteByte('\n')
				}
			}
			text := sb.String()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := tok.Encode(text, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStream detokenizes the suite's ids one at a time.
func BenchmarkStream(b *testing.B) {
	for _, s := range suites {
		b.Run(s.file, func(b *testing.B) {
			tok := loadShared(b, "tokenizer", s.file)
			cases := loadSuite(b, s.file)
			for b.Loop() {
				for _, c := range cases {
					st := tok.NewStream()
					for _, id := range c.want {
						st.Add(id)
					}
					st.Flush()
				}
			}
		})
	}
}

// BenchmarkPreTokenize compares the hand-written Llama 3 and Qwen2 stages with regexp2
// running the same regex (llama.cpp's spelling), on 4.1 KB of mixed text (llama.cpp's suite
// inputs four times: English, code, white-space runs, digits, Cyrillic, Khmer, CJK, emoji).
//
//	go test -run '^$' -bench PreTokenize -benchtime 2s -count 5 ./models/tokenizer/
//
// Medians of 5 (range) on the project's 2-core machine, go1.26.8 amd64, regexp2 v2.13.0,
// with other work running (load 2–3):
//
//	llama3/hand     96 µs/op (73–134)    llama3/regexp2  549 µs/op (483–574)    hand 5.7× faster
//	qwen2/hand      81 µs/op (77–87)     qwen2/regexp2   793 µs/op (650–845)    hand 9.8× faster
func BenchmarkPreTokenize(b *testing.B) {
	var sb strings.Builder
	for range 4 {
		for _, c := range loadSuite(b, "ggml-vocab-llama-bpe.gguf") {
			sb.WriteString(c.in)
			sb.WriteByte('\n')
		}
	}
	text := sb.String()
	for _, c := range []struct {
		name  string
		regex string
	}{{"llama3", regexLlama3}, {"qwen2", regexQwen2}} {
		re, err := newRegexStage(c.regex)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name  string
			stage splitStage
		}{{"hand", handStages[c.regex]}, {"regexp2", re}} {
			pt := &preTokenizer{name: c.name, stages: []splitStage{impl.stage}}
			b.Run(c.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					if _, err := pt.split(text); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
