package tokenizer

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The vocabulary sizes Synthetic builds.
const (
	// SyntheticMinVocab is the smallest synthetic vocabulary: <unk>, <s>, </s>, the 256 byte
	// tokens, "▁" and the 94 printable ASCII characters other than space.
	SyntheticMinVocab = 3 + 256 + 1 + 94
	// SyntheticMaxVocab is the largest synthetic vocabulary, past every Llama-family vocab
	// (Llama 3's 128256, Gemma's 256000).
	SyntheticMaxVocab = 1 << 18
)

// The special tokens of a synthetic vocabulary, where the Llama 1/2 vocab has them.
const (
	syntheticUnk   = 0
	syntheticBOS   = 1
	syntheticEOS   = 2
	syntheticBytes = 3 // <0x00> is id 3, <0xFF> id 258
)

// Synthetic builds a SentencePiece vocabulary of exactly size tokens from tables in the
// binary, with no file, for models that run with dummy weights. Its name (String) is
// "synthetic-<size>". The layout is the Llama 1/2 vocab's: id 0 <unk>, 1 <s> (BOS), 2 </s>
// (EOS), 3–258 the byte tokens <0x00>…<0xFF>, then ordinary pieces with strictly descending
// scores, in this order until size is reached:
//
//	"▁" and the printable ASCII characters; "▁" + each letter
//	frequent English word pieces ("er", "ing", "tion", …), frequent words ("▁the", "▁of",
//	  …) and capitalized sentence starters ("▁The", "▁Hello", …), interleaved; "▁" + digit,
//	  runs of "▁", a few punctuation pieces and frequent non-ASCII characters among them
//	the capitalized words ("▁Word")
//	generated syllables, onset + vowel + coda ("str"+"ea"+"m"), with and without "▁"
//	the capitalized "▁" syllables, then pairs of open syllables
//
// Each piece's prefixes (at character boundaries) are pieces with higher scores, inserted
// just before it when they are not there already. So every piece is reachable by
// SentencePiece's pairwise merges, and a word whose "▁word" piece is in the vocabulary
// encodes to that one piece. Text outside the vocabulary (other characters, emoji, control
// characters) falls back to byte tokens, so Decode(Encode(s, false)) is s for any s without
// "▁". Every piece is valid UTF-8 except the byte tokens <0x80>…<0xFF>, which decode to a
// lone byte, as in every byte-fallback vocab; NewStream joins them into characters (and
// gives U+FFFD for a byte that cannot be part of one).
//
// BOS is added (add_bos_token true) and text gets a space prefix (add_space_prefix true), as
// FromGGUF's llama defaults. The build is deterministic, the same size giving the same ids,
// and takes milliseconds; the result is immutable and may be shared. Sizes below
// SyntheticMinVocab or above SyntheticMaxVocab are an error naming the size.
func Synthetic(size int) (*Tokenizer, error) {
	name := "synthetic-" + strconv.Itoa(size)
	if size < SyntheticMinVocab || size > SyntheticMaxVocab {
		return nil, fmt.Errorf("tokenizer: %s: a synthetic vocabulary has %d to %d tokens (3 special, 256 byte, \"▁\" and the 94 printable ASCII characters at least), not %d",
			name, SyntheticMinVocab, SyntheticMaxVocab, size)
	}
	s := newPieceSet(size)
	for p := range syntheticCandidates() {
		s.add(p)
		if s.full() {
			break
		}
	}
	if !s.full() { // the candidates outnumber SyntheticMaxVocab; synthetic_test.go checks
		return nil, fmt.Errorf("tokenizer: %s: the generated pieces ran out at %d tokens", name, len(s.tokens))
	}
	v := vocab{
		kind:   SentencePiece,
		tokens: s.tokens,
		types:  make([]TokenType, size),
		scores: make([]float32, size),
		bos:    syntheticBOS, eos: syntheticEOS, unk: syntheticUnk,
		addBOS: true, addSpacePrefix: true,
	}
	v.types[syntheticUnk] = TypeUnknown
	v.types[syntheticBOS] = TypeControl
	v.types[syntheticEOS] = TypeControl
	for id := syntheticBytes; id < syntheticBytes+256; id++ {
		v.types[id] = TypeByte
	}
	for id := syntheticBytes + 256; id < size; id++ {
		v.types[id] = TypeNormal
		v.scores[id] = -float32(id - (syntheticBytes + 256)) // exact: ids < 2^24
	}
	return build(name, v)
}

// String returns the tokenizer's name: the file it was loaded from, or "synthetic-<size>"
// for Synthetic's.
func (t *Tokenizer) String() string { return t.source }

// pieceSet collects distinct pieces in order, up to a limit.
type pieceSet struct {
	tokens []string
	limit  int
	seen   map[string]struct{}
}

// newPieceSet returns a set holding the special and byte tokens, with room for limit tokens.
func newPieceSet(limit int) *pieceSet {
	s := &pieceSet{tokens: make([]string, 0, limit), limit: limit, seen: make(map[string]struct{}, limit)}
	const hex = "0123456789ABCDEF"
	for _, p := range []string{"<unk>", "<s>", "</s>"} {
		s.tokens = append(s.tokens, p)
	}
	for b := range 256 {
		s.tokens = append(s.tokens, string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'}))
	}
	for _, p := range s.tokens {
		s.seen[p] = struct{}{}
	}
	return s
}

func (s *pieceSet) full() bool { return len(s.tokens) >= s.limit }

// add appends the prefixes of p (at character boundaries) that are missing, shortest first,
// then p, until the set is full: so every ordinary piece has its prefixes before it, with
// higher scores. Since that holds for every piece added, the longest prefix present says
// which are missing; looking for it from the longest end takes one or two map look-ups for
// most candidates, where a look-up per prefix would cost three times as much (the map is
// too large for the caches at 128256 tokens). No candidate starts with the text of a special
// or byte token ("<s>", "<0x41>"), which are in the set without their prefixes.
func (s *pieceSet) add(p string) {
	end := len(p) // p[:end] is the longest prefix found missing so far
	for end > 0 {
		if _, ok := s.seen[p[:end]]; ok {
			break
		}
		_, n := utf8.DecodeLastRuneInString(p[:end])
		end -= n
	}
	// p[:end] is present (or empty); add the longer prefixes, shortest first.
	for end < len(p) && !s.full() {
		_, n := utf8.DecodeRuneInString(p[end:])
		end += n
		s.seen[p[:end]] = struct{}{}
		s.tokens = append(s.tokens, p[:end])
	}
}

// syntheticCandidates yields Synthetic's pieces in score order, duplicates included (the
// pieceSet drops them), up to well past SyntheticMaxVocab distinct pieces.
func syntheticCandidates() iter.Seq[string] {
	return func(yield func(string) bool) {
		const sp = "▁"
		// "▁", then the printable ASCII characters and "▁" + letter.
		if !yield(sp) {
			return
		}
		for c := byte('!'); c <= '~'; c++ {
			if !yield(string(c)) {
				return
			}
		}
		for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" {
			if !yield(sp + string(c)) {
				return
			}
		}

		// Subwords, words and starters round-robin (1:3:1); after the first rounds, digits,
		// white-space runs, punctuation and non-ASCII characters.
		subwords := strings.Fields(syntheticSubwords)
		words := strings.Fields(syntheticWords)
		starters := strings.Fields(syntheticStarters)
		const roundsBeforeExtras = 60
		for r, w := 0, 0; r < len(subwords) || w < len(words) || r < len(starters); r++ {
			if r == roundsBeforeExtras {
				for p := range syntheticExtras() {
					if !yield(p) {
						return
					}
				}
			}
			if r < len(subwords) && !yield(subwords[r]) {
				return
			}
			for end := min(w+3, len(words)); w < end; w++ {
				if !yield(sp + words[w]) {
					return
				}
			}
			if r < len(starters) && !yield(sp+starters[r]) {
				return
			}
		}
		for _, w := range words {
			if !yield(sp + capitalize(w)) {
				return
			}
		}

		// Generated syllables: lower case with and without "▁", then capitalized with "▁",
		// then two open syllables (onset + vowel) with and without "▁".
		onsets := syntheticInventory(syntheticOnsets)
		nuclei := syntheticInventory(syntheticNuclei)
		codas := syntheticInventory(syntheticCodas)
		for syl := range syllables(onsets, nuclei, codas) {
			if !yield(sp+syl) || !yield(syl) {
				return
			}
		}
		for syl := range syllables(onsets, nuclei, codas) {
			if !yield(sp + capitalize(syl)) {
				return
			}
		}
		var open []string
		for syl := range syllables(onsets, nuclei, []string{""}) {
			open = append(open, syl)
		}
		for n := 0; n <= 2*(len(open)-1); n++ { // pairs (i, n-i) by the sum of their ranks
			for i := max(0, n-len(open)+1); i <= min(n, len(open)-1); i++ {
				p := open[i] + open[n-i]
				if !yield(sp+p) || !yield(p) {
					return
				}
			}
		}
	}
}

// syntheticExtras yields "▁" + digit, runs of "▁", a few punctuation pieces of prose and
// code, and frequent non-ASCII characters.
func syntheticExtras() iter.Seq[string] {
	return func(yield func(string) bool) {
		for c := byte('0'); c <= '9'; c++ {
			if !yield("▁" + string(c)) {
				return
			}
		}
		if !yield(strings.Repeat("▁", 8)) { // and, as its prefixes, the shorter runs
			return
		}
		for _, p := range strings.Fields(`▁( ▁" ▁' ▁- ▁[ ▁{ ▁$ ▁= ▁* ▁# ▁/ ▁< ▁& ▁+ ▁@ ▁| ▁:
			... -- == // ** () ); ): -> => :: {} [] ## </ /> ", ".`) {
			if !yield(p) {
				return
			}
		}
		for _, p := range strings.Fields(syntheticExtraChars) {
			if !yield(p) {
				return
			}
		}
	}
}

// syntheticInventory splits an inventory, "-" standing for the empty string.
func syntheticInventory(list string) []string {
	f := strings.Fields(list)
	for i, x := range f {
		if x == "-" {
			f[i] = ""
		}
	}
	return f
}

// syllables yields every onset+nucleus+coda in order of the sum of the three indices, then
// of the onset's and the nucleus's index.
func syllables(onsets, nuclei, codas []string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for n := 0; n <= len(onsets)+len(nuclei)+len(codas)-3; n++ {
			for i := 0; i < len(onsets) && i <= n; i++ {
				for j := 0; j < len(nuclei) && i+j <= n; j++ {
					k := n - i - j
					if k >= len(codas) {
						continue
					}
					if !yield(onsets[i] + nuclei[j] + codas[k]) {
						return
					}
				}
			}
		}
	}
}

// capitalize upper-cases an ASCII word's first letter.
func capitalize(w string) string {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return w
	}
	return string(w[0]-'a'+'A') + w[1:]
}
