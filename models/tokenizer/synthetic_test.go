package tokenizer

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// syntheticSizes are the vocab sizes of the model presets (tiny, demo, medium) and of the
// real shapes (Llama 2, Llama 3).
var syntheticSizes = []int{512, 4096, 16384, 32000, 128256}

var syntheticBuilt sync.Map // size → *Tokenizer: each size is built once per test binary

// synthetic returns Synthetic(size), built once.
func synthetic(t testing.TB, size int) *Tokenizer {
	t.Helper()
	if tok, ok := syntheticBuilt.Load(size); ok {
		return tok.(*Tokenizer)
	}
	tok, err := Synthetic(size)
	require.NoError(t, err)
	syntheticBuilt.Store(size, tok)
	return tok
}

// syntheticTexts round-trip through every synthetic vocab: English, white space, digits,
// punctuation, special-token text, non-ASCII text and emoji (byte fallback).
var syntheticTexts = []string{
	"",
	" ",
	"\n",
	"Hello my name is",
	"Hello, world! How are you today?",
	"The quick brown fox jumps over the lazy dog.",
	"I think that the government should provide information about the new program.",
	"  two leading spaces, and trailing ones  ",
	"multiple    spaces\tand\ttabs\t",
	"line one\nline two\n\nline four\r\nCRLF\n",
	"\n\tindented\n\t\tcode() {\n\t\treturn x->y;\n\t}\n",
	"def main():\n    print(\"hi\")\n    return 0\n",
	"Digits: 0123456789, 3.14159, 1,000,000 and 42%.",
	"Punctuation: !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
	"<s> </s> <unk> <0x41> are plain text here",
	"Café, naïve, résumé, Straße, Ünïcödé — “quoted” ‘single’ … 20 °C, €5, £3",
	"日本語のテキスト, Привет мир, مرحبا بالعالم, नमस्ते",
	"Emoji: 🦙🚀😀 👩‍👩‍👧 😶‍🌫️ ✅ 🇺🇸",
	"\x00\x01\x1b[0m\x7f control bytes",
	"UPPER CASE WORDS and MiXeD CaSe",
}

// TestSyntheticLayout checks the vocabulary of each preset size and of the smallest and
// largest: the exact size, the Llama layout of the special and byte tokens, distinct valid
// pieces with descending scores, and every piece's prefixes before it.
func TestSyntheticLayout(t *testing.T) {
	for _, size := range append(syntheticSizes, SyntheticMinVocab, SyntheticMaxVocab) {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			tok := synthetic(t, size)
			require.Equal(t, size, tok.VocabSize())
			require.Equal(t, SentencePiece, tok.Kind())
			require.Equal(t, "synthetic-"+strconv.Itoa(size), tok.String())
			require.Equal(t, 1, tok.BOS())
			require.Equal(t, 2, tok.EOS())
			require.True(t, tok.AddsBOS())
			require.False(t, tok.AddsEOS())
			require.True(t, tok.addSpacePrefix)
			require.Equal(t, "<unk>", tok.Piece(0))
			require.Equal(t, TypeUnknown, tok.Type(0))
			require.Equal(t, "<s>", tok.Piece(1))
			require.Equal(t, TypeControl, tok.Type(1))
			require.Equal(t, "</s>", tok.Piece(2))
			require.Equal(t, TypeControl, tok.Type(2))
			for b := range 256 {
				require.Equal(t, "<0x"+strings.ToUpper(strconv.FormatInt(int64(b)|0x100, 16)[1:])+">", tok.Piece(3+b))
				require.Equal(t, TypeByte, tok.Type(3+b))
				require.Equal(t, 3+b, tok.byteID[b])
			}
			require.Equal(t, "▁", tok.Piece(259))
			// Plain checks in the loops over the vocab: require per element is slow at 128256.
			ids := make(map[string]int, size)
			for id := range size {
				p := tok.Piece(id)
				if !utf8.ValidString(p) {
					t.Fatalf("id %d %q is not valid UTF-8", id, p)
				}
				if prev, dup := ids[p]; dup {
					t.Fatalf("ids %d and %d are both %q", prev, id, p)
				}
				ids[p] = id
				if tok.toID[p] != id {
					t.Fatalf("toID[%q] = %d, want %d", p, tok.toID[p], id)
				}
				if id < 259 {
					continue
				}
				if tok.Type(id) != TypeNormal {
					t.Fatalf("id %d %q has type %v", id, p, tok.Type(id))
				}
				if id > 259 && tok.scores[id] >= tok.scores[id-1] {
					t.Fatalf("id %d %q: score %v is not below %v", id, p, tok.scores[id], tok.scores[id-1])
				}
				if strings.Contains(strings.TrimLeft(p, "▁"), "▁") {
					t.Fatalf("id %d %q: \"▁\" only leads (runs of it are pieces of their own)", id, p)
				}
				for i := range p {
					if pid, ok := ids[p[:i]]; i > 0 && (!ok || pid >= id) {
						t.Fatalf("id %d %q: its prefix %q is not an earlier piece", id, p, p[:i])
					}
				}
			}
			for c := byte('!'); c <= '~'; c++ {
				_, ok := ids[string(c)]
				require.True(t, ok, "every printable ASCII character is a piece: %q is not", c)
			}
		})
	}
}

// TestSyntheticRoundTrip: Decode(Encode(s)) is s for every text and size, the stream gives
// the same text chunk by chunk, and with BOS the ids start with 1.
func TestSyntheticRoundTrip(t *testing.T) {
	for _, size := range syntheticSizes {
		tok := synthetic(t, size)
		for _, s := range syntheticTexts {
			ids, err := tok.Encode(s, false)
			require.NoError(t, err, "%d %q", size, s)
			got, err := tok.Decode(ids)
			require.NoError(t, err)
			require.Equal(t, s, got, "%d %q: %q", size, s, pieces(tok, ids))
			require.Equal(t, s, streamText(t, tok, ids), "%d %q", size, s)

			withBOS, err := tok.Encode(s, true)
			require.NoError(t, err)
			require.Equal(t, append([]int{1}, ids...), withBOS)
			got, err = tok.Decode(withBOS)
			require.NoError(t, err)
			if s != "" {
				s = " " + s // BOS takes the first position, so the prefix's space stays
			}
			require.Equal(t, s, got, "%d", size)
		}
		for _, s := range []string{"\xff\xfe", "a\xc3", "\xe2\x82 x", "\x80\x80abc"} {
			ids, err := tok.Encode(s, false)
			require.NoError(t, err, "%d %q", size, s)
			got, err := tok.Decode(ids)
			require.NoError(t, err)
			require.Equal(t, s, got, "%d %q", size, s)
		}
	}
}

// TestSyntheticHello pins the tokens of the default prompt: BOS, then (from the demo size
// up) one piece per word.
func TestSyntheticHello(t *testing.T) {
	for _, size := range syntheticSizes {
		tok := synthetic(t, size)
		ids, err := tok.Encode("Hello my name is", true)
		require.NoError(t, err)
		require.Equal(t, 1, ids[0], "%d", size)
		if size >= 4096 {
			var got []string
			for _, id := range ids[1:] {
				got = append(got, tok.Piece(id))
			}
			require.Equal(t, []string{"▁Hello", "▁my", "▁name", "▁is"}, got, "%d", size)
		}
	}
	// The tiny vocab still has the most frequent words.
	ids, err := synthetic(t, 512).Encode("the cat is in the house", false)
	require.NoError(t, err)
	require.Less(t, len(ids), len("the cat is in the house")*2/3)
}

// TestSyntheticWordsAreOnePiece: a word whose "▁word" piece is in the vocab encodes to that
// piece alone (its prefixes are all pieces, so SentencePiece's merges always reach it).
func TestSyntheticWordsAreOnePiece(t *testing.T) {
	for _, size := range syntheticSizes {
		tok := synthetic(t, size)
		n := 0
		for id := 259; id < size; id++ {
			p := tok.Piece(id)
			w, ok := strings.CutPrefix(p, "▁")
			if !ok || w == "" || strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
				continue
			}
			n++
			ids, err := tok.Encode(w, false)
			if err != nil || len(ids) != 1 || ids[0] != id {
				t.Fatalf("%d: %q (id %d) encodes to %q, %v", size, w, id, pieces(tok, ids), err)
			}
		}
		require.Greater(t, n, size/4, "%d: most of the vocab is words", size)
	}
}

// TestSyntheticEveryIDDecodes: every id decodes without error, alone and through a stream;
// all but the byte tokens <0x80>…<0xFF> (a lone byte, as in Llama's vocab) to valid UTF-8.
func TestSyntheticEveryIDDecodes(t *testing.T) {
	for _, size := range syntheticSizes {
		tok := synthetic(t, size)
		all := tok.NewStream()
		for id := range size { // plain checks: require per id is slow at 128256
			text, err := tok.Decode([]int{id})
			if err != nil {
				t.Fatalf("%d: Decode id %d: %v", size, id, err)
			}
			st := tok.NewStream()
			chunk := st.Add(id)
			flushed := st.Flush()
			if b := id - 3; b >= 0x80 && b <= 0xff {
				// A lone byte that is not UTF-8: one U+FFFD, at once or (a lead byte, which
				// might still be completed) at Flush.
				if text != string([]byte{byte(b)}) || chunk+flushed != "\uFFFD" {
					t.Fatalf("%d: byte id %d decodes to %q, streams to %q + %q", size, id, text, chunk, flushed)
				}
			} else if !utf8.ValidString(text) || chunk != text || flushed != "" {
				t.Fatalf("%d: id %d decodes to %q, streams to %q + %q", size, id, text, chunk, flushed)
			}
			if st.Err() != nil {
				t.Fatalf("%d: id %d: %v", size, id, st.Err())
			}
			if chunk := all.Add(id); !utf8.ValidString(chunk) {
				t.Fatalf("%d: id %d in sequence streams to %q", size, id, chunk)
			}
		}
		require.True(t, utf8.ValidString(all.Flush()))
		require.NoError(t, all.Err())
		_, err := tok.Decode([]int{size})
		require.ErrorContains(t, err, "token id "+strconv.Itoa(size)+" ")
	}
}

// TestSyntheticDeterministic: two builds are identical, and a smaller vocab is the start of
// a larger one, so a piece has the same id at every size.
func TestSyntheticDeterministic(t *testing.T) {
	a, err := Synthetic(32000)
	require.NoError(t, err)
	b, err := Synthetic(32000)
	require.NoError(t, err)
	require.Equal(t, a.tokens, b.tokens)
	require.Equal(t, a.types, b.types)
	require.Equal(t, a.scores, b.scores)
	big := synthetic(t, 128256)
	for _, size := range syntheticSizes {
		small := synthetic(t, size)
		require.Equal(t, small.tokens, big.tokens[:size], "%d", size)
		require.Equal(t, small.scores, big.scores[:size], "%d", size)
	}
}

// TestSyntheticSizeLimits: sizes outside [SyntheticMinVocab, SyntheticMaxVocab] are errors
// naming the size; the limits themselves build.
func TestSyntheticSizeLimits(t *testing.T) {
	for _, size := range []int{-1, 0, 1, 258, 259, SyntheticMinVocab - 1, SyntheticMaxVocab + 1} {
		_, err := Synthetic(size)
		require.Error(t, err, "%d", size)
		require.ErrorContains(t, err, "synthetic-"+strconv.Itoa(size)+":")
		require.ErrorContains(t, err, "not "+strconv.Itoa(size))
	}
	for _, size := range []int{SyntheticMinVocab, SyntheticMaxVocab} {
		tok := synthetic(t, size)
		require.Equal(t, size, tok.VocabSize())
		for _, s := range syntheticTexts {
			ids, err := tok.Encode(s, false)
			require.NoError(t, err)
			got, err := tok.Decode(ids)
			require.NoError(t, err)
			require.Equal(t, s, got, "%d", size)
		}
	}
}

// TestSyntheticInventories checks the embedded lists: words, subwords and syllable parts
// are ASCII letters (so every piece built from them is valid UTF-8 and "▁" only leads), the
// extra characters single non-ASCII characters.
func TestSyntheticInventories(t *testing.T) {
	letters := func(s string) bool {
		return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
	}
	for name, list := range map[string]string{
		"starters": syntheticStarters, "subwords": syntheticSubwords, "words": syntheticWords,
		"onsets": syntheticOnsets, "nuclei": syntheticNuclei, "codas": syntheticCodas,
	} {
		for _, w := range strings.Fields(list) {
			require.True(t, letters(w) || w == "-", "%s: %q", name, w)
		}
	}
	for _, c := range strings.Fields(syntheticExtraChars) {
		require.Equal(t, 1, utf8.RuneCountInString(c), "%q", c)
		require.Greater(t, c[0], byte(0x7f), "%q", c)
	}
}

// FuzzSyntheticRoundTrip: with the demo vocab, Encode never fails, and Decode(Encode(s)) is
// s (with "▁" read as a space), also through the stream when s is valid UTF-8.
func FuzzSyntheticRoundTrip(f *testing.F) {
	tok := synthetic(f, 4096)
	for _, s := range syntheticTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		requireRoundTrip(t, tok, s)
	})
}

// BenchmarkSynthetic builds each preset's vocabulary, and the largest.
//
//	go test -run '^$' -bench Synthetic -benchmem ./models/tokenizer/
func BenchmarkSynthetic(b *testing.B) {
	for _, size := range append(syntheticSizes, SyntheticMaxVocab) {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			for b.Loop() {
				if _, err := Synthetic(size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSyntheticEncode encodes English prose with the demo and Llama 3 sized vocabs.
func BenchmarkSyntheticEncode(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. I think that the government should provide information about the new program.\n", 50)
	for _, size := range []int{4096, 128256} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			tok := synthetic(b, size)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := tok.Encode(text, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
