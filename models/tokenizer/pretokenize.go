package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// A preTokenizer splits a raw-text fragment into the pre-tokens that byte-level BPE merges
// one at a time. It is llama.cpp's unicode_regex_split: a list of stages (one regex each),
// every stage splitting each piece the previous stages left, so a later stage never joins
// what an earlier one split; the matches and the text between them both become pieces.
// Every stage of the GGUF pre-tokenizer types is written by hand (pretokenize_*.go, each
// with its regex in its doc); a Hugging Face Split regex without one runs through regexp2
// (pretokenize_regex.go).
type preTokenizer struct {
	name   string // the llama.cpp type whose regexes the stages are, e.g. "llama3"; or "custom"
	stages []splitStage
}

// splitStage is one regex of a pre-tokenizer.
type splitStage interface {
	// split appends to lens the lengths, in characters, of the consecutive sub-pieces of p
	// (which add up to p's length), as the regex's matches and the gaps between them. Only
	// regexStage can fail.
	split(p piece, lens []int) ([]int, error)
	// regex is the regex the stage implements.
	regex() string
}

// charFlags are a character's classes, as llama.cpp's unicode_cpt_flags has them.
type charFlags uint8

const (
	flagChar   charFlags = 1 << iota // every character has it: flags 0 means past the end
	flagLetter                       // \p{L}
	flagNumber                       // \p{N}
	flagSpace                        // \s
	flagPunct                        // \p{P}
)

func (f charFlags) letter() bool { return f&flagLetter != 0 }
func (f charFlags) number() bool { return f&flagNumber != 0 }
func (f charFlags) space() bool  { return f&flagSpace != 0 }
func (f charFlags) punct() bool  { return f&flagPunct != 0 }

// other is [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls and the rest.
func (f charFlags) other() bool { return f&(flagChar|flagLetter|flagNumber|flagSpace) == flagChar }

// latin1Flags holds the flags of U+0000–U+00FF, the common case.
var latin1Flags = func() (t [256]charFlags) {
	for r := range rune(len(t)) {
		t[r] = flagsOfRune(r)
	}
	return t
}()

// flagsOf returns r's classes, from Go's Unicode tables. White space is Go's unicode.IsSpace,
// the same set as llama.cpp's unicode_set_whitespace (and regexp2's \s): \t \n \v \f \r,
// space, U+0085, U+00A0 and the Unicode White_Space characters. No white-space character is
// a letter, number or punctuation.
func flagsOf(r rune) charFlags {
	if r < rune(len(latin1Flags)) {
		return latin1Flags[r]
	}
	return flagsOfRune(r)
}

// flagsOfRune tests letters first, the most common class beyond Latin-1; the classes are
// disjoint, so the order changes nothing else.
func flagsOfRune(r rune) charFlags {
	switch {
	case unicode.IsLetter(r):
		return flagChar | flagLetter
	case unicode.IsSpace(r):
		return flagChar | flagSpace
	case unicode.IsNumber(r):
		return flagChar | flagNumber
	case unicode.IsPunct(r):
		return flagChar | flagPunct
	}
	return flagChar
}

// piece is a run of the text's characters with their flags. Stages look at one piece at a
// time: a regex applied to a piece sees its end as the end of the input, as llama.cpp's
// regex iterator over the piece's range does.
type piece struct {
	r []rune
	f []charFlags
}

func (p piece) len() int { return len(p.r) }

// flags returns the flags at i, 0 past either end (llama.cpp's OUT_OF_RANGE).
func (p piece) flags(i int) charFlags {
	if i >= 0 && i < len(p.f) {
		return p.f[i]
	}
	return 0
}

// at returns the character at i, −1 past either end.
func (p piece) at(i int) rune {
	if i >= 0 && i < len(p.r) {
		return p.r[i]
	}
	return -1
}

// sub returns the characters [i, j).
func (p piece) sub(i, j int) piece { return piece{r: p.r[i:j], f: p.f[i:j]} }

// decodeText splits text into characters, their flags and byte offsets (one more than
// characters). A byte that is not valid UTF-8 is one character U+FFFD, as llama.cpp's
// unicode_cpts_from_utf8 has it; the pieces still cut the original bytes, so they
// concatenate to the text.
func decodeText(text string) (piece, []int) {
	n := utf8.RuneCountInString(text) // counts each invalid byte as one, as range does
	p := piece{r: make([]rune, n), f: make([]charFlags, n)}
	offs := make([]int, n+1)
	k := 0
	for i, r := range text { // range yields U+FFFD for each invalid byte
		p.r[k], p.f[k], offs[k] = r, flagsOf(r), i
		k++
	}
	offs[n] = len(text)
	return p, offs
}

// split returns text's pre-tokens: non-empty substrings that concatenate to text.
func (pt *preTokenizer) split(text string) ([]string, error) {
	if text == "" {
		return nil, nil
	}
	all, offs := decodeText(text)
	lens := make([]int, 1, all.len()/2+1)
	lens[0] = all.len()
	next := make([]int, 0, cap(lens))
	var err error
	for _, st := range pt.stages {
		next = next[:0]
		pos := 0
		for _, n := range lens {
			if next, err = st.split(all.sub(pos, pos+n), next); err != nil {
				return nil, err
			}
			pos += n
		}
		lens, next = next, lens
	}
	words := make([]string, 0, len(lens))
	pos := 0
	for _, n := range lens {
		if n > 0 {
			words = append(words, text[offs[pos]:offs[pos+n]])
		}
		pos += n
	}
	return words, nil
}

// regexes returns the stages' regexes in order.
func (pt *preTokenizer) regexes() []string {
	out := make([]string, len(pt.stages))
	for i, st := range pt.stages {
		out[i] = st.regex()
	}
	return out
}

// cutter collects a stage's sub-pieces: add(end) closes the sub-piece that ends at end.
type cutter struct {
	lens []int
	prev int
}

func (c *cutter) add(end int) {
	if end > c.prev {
		c.lens = append(c.lens, end-c.prev)
	}
	c.prev = end
}
