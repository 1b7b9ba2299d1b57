package tokenizer

// The Llama 3 and Qwen2 regexes as llama.cpp lists them: Hugging Face's (?i:'s|'t|…) group
// written out as '[sS]|'[tT]|… for std::regex, which has no inline flags.
const (
	regexLlama3 = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexQwen2  = `(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// The originals, as tokenizer.json files hold them.
	regexLlama3HF = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexQwen2HF  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// llama3Stage splits with Llama 3's regex (maxDigits 3)
//
//	(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// or Qwen2's (maxDigits 1), the same with \p{N} for \p{N}{1,3}, written out by hand as
// llama.cpp's unicode_regex_split_custom_llama3. (llama.cpp runs Qwen2's through std::regex;
// TestStagesMatchRegex and FuzzPreTokenizersMatchRegex check that this gives the same
// pieces.) The contractions ignore case: the only characters whose lower case is one of
// s, t, r, e, v, m, l, d are their ASCII capitals, so comparing ASCII case-insensitively is
// llama.cpp's unicode_tolower test.
type llama3Stage struct {
	maxDigits int
}

func (s llama3Stage) regex() string {
	if s.maxDigits == 1 {
		return regexQwen2
	}
	return regexLlama3
}

// lowerASCII lower-cases an ASCII capital and keeps any other character.
func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + ('a' - 'A')
	}
	return r
}

func (s llama3Stage) split(p piece, lens []int) ([]int, error) {
	n := p.len()
	cut := cutter{lens: lens}
	for pos := 0; pos < n; {
		c, f := p.r[pos], p.f[pos]

		// (?i:'s|'t|'re|'ve|'m|'ll|'d)
		if c == '\'' && pos+1 < n {
			c1 := lowerASCII(p.r[pos+1])
			if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
				pos += 2
				cut.add(pos)
				continue
			}
			if pos+2 < n {
				c2 := lowerASCII(p.r[pos+2])
				if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
					pos += 3
					cut.add(pos)
					continue
				}
			}
		}

		// [^\r\n\p{L}\p{N}]?\p{L}+
		if c != '\r' && c != '\n' && !f.number() && (f.letter() || p.flags(pos+1).letter()) {
			pos++
			for pos < n && p.f[pos].letter() {
				pos++
			}
			cut.add(pos)
			continue
		}

		// \p{N}{1,3}: a run of numbers in pieces of up to maxDigits
		if f.number() {
			start := pos
			for pos < n && p.f[pos].number() {
				pos++
				if pos-start == s.maxDigits {
					cut.add(pos)
					start = pos
				}
			}
			cut.add(pos)
			continue
		}

		// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
		f2 := f
		if c == ' ' {
			f2 = p.flags(pos + 1)
		}
		if f2.other() {
			if c == ' ' {
				pos++
			}
			for pos < n && p.f[pos].other() {
				pos++
			}
			for pos < n && (p.r[pos] == '\r' || p.r[pos] == '\n') {
				pos++
			}
			cut.add(pos)
			continue
		}

		ws, lastNewline := 0, -1
		for pos+ws < n && p.f[pos+ws].space() {
			if r := p.r[pos+ws]; r == '\r' || r == '\n' {
				lastNewline = pos + ws
			}
			ws++
		}
		switch {
		case lastNewline >= 0: // \s*[\r\n]+: up to the run's last line break
			pos = lastNewline + 1
		case ws > 1 && pos+ws < n: // \s+(?!\S): leave the last space to the next pre-token
			pos += ws - 1
		case ws > 0: // \s+
			pos += ws
		default: // unreachable: every character has a class
			pos++
		}
		cut.add(pos)
	}
	return cut.lens, nil
}
