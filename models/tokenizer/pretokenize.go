package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes of the GPT-2 pre-tokenizer regex.
const (
	clsNone   uint8 = iota // past the end of the text
	clsLetter              // \p{L}
	clsNumber              // \p{N}
	clsSpace               // \s
	clsOther               // [^\s\p{L}\p{N}]
)

func classOf(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.IsSpace(r): // the same set as llama.cpp's and Python's \s
		return clsSpace
	}
	return clsOther
}

// splitGPT2 splits text into pre-tokens with GPT-2's regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// written out by hand (Go's regexp has no lookahead), as llama.cpp's
// unicode_regex_split_custom_gpt2 does. The pre-tokens are substrings of text and
// concatenate to it. A byte that is not valid UTF-8 is one character of class "other", as
// U+FFFD would be.
func splitGPT2(text string) []string {
	n := utf8.RuneCountInString(text)
	runes := make([]rune, 0, n)
	offs := make([]int, 0, n+1)
	for i, r := range text {
		runes = append(runes, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(text))
	rn := func(pos int) rune {
		if pos < n {
			return runes[pos]
		}
		return -1
	}
	cls := func(pos int) uint8 {
		if pos < n {
			return classOf(runes[pos])
		}
		return clsNone
	}

	words := make([]string, 0, n/4+1)
	prev := 0
	add := func(end int) {
		if end > prev {
			words = append(words, text[offs[prev]:offs[end]])
		}
		prev = end
	}
	for pos := 0; pos < n; {
		c := runes[pos]
		// 's|'t|'re|'ve|'m|'ll|'d
		if c == '\'' && pos+1 < n {
			c1 := runes[pos+1]
			if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
				pos += 2
				add(pos)
				continue
			}
			if c2 := rn(pos + 2); (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
				pos += 3
				add(pos)
				continue
			}
		}
		// ' ?' looks one past an optional leading space.
		k := cls(pos)
		if c == ' ' {
			k = cls(pos + 1)
		}
		if k == clsLetter || k == clsNumber || k == clsOther { // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
			if c == ' ' {
				pos++
			}
			for cls(pos) == k {
				pos++
			}
			add(pos)
			continue
		}
		ws := 0
		for cls(pos+ws) == clsSpace {
			ws++
		}
		switch {
		case ws > 1 && pos+ws < n: // \s+(?!\S): leave the last space to the next pre-token
			pos += ws - 1
		case ws > 0: // \s+
			pos += ws
		default: // unreachable: every character has a class
			pos++
		}
		add(pos)
	}
	return words
}
