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
