package tokenizer

// regexGPT2 is GPT-2's pre-tokenizer regex as llama.cpp lists it (without the final |\s+ of
// the original: a lone white-space character the other alternatives leave is a piece of its
// own either way).
const regexGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`

// regexGPT2HF is the same regex as Hugging Face's ByteLevel pre-tokenizer has it.
const regexGPT2HF = regexGPT2 + `|\s+`

// gpt2Stage splits with GPT-2's regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// written out by hand (Go's regexp has no look-ahead), as llama.cpp's
// unicode_regex_split_custom_gpt2. The contractions are case-sensitive.
type gpt2Stage struct{}

func (gpt2Stage) regex() string { return regexGPT2 }

func (gpt2Stage) split(p piece, lens []int) ([]int, error) {
	n := p.len()
	cut := cutter{lens: lens}
	for pos := 0; pos < n; {
		c := p.r[pos]
		// 's|'t|'re|'ve|'m|'ll|'d
		if c == '\'' && pos+1 < n {
			c1 := p.r[pos+1]
			if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
				pos += 2
				cut.add(pos)
				continue
			}
			if c2 := p.at(pos + 2); (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
				pos += 3
				cut.add(pos)
				continue
			}
		}
		// ' ?' looks one past an optional leading space.
		f := p.f[pos]
		if c == ' ' {
			f = p.flags(pos + 1)
		}
		var run func(charFlags) bool
		switch {
		case f.letter(): // ' ?\p{L}+'
			run = charFlags.letter
		case f.number(): // ' ?\p{N}+'
			run = charFlags.number
		case f.other(): // ' ?[^\s\p{L}\p{N}]+'
			run = charFlags.other
		}
		if run != nil {
			if c == ' ' {
				pos++
			}
			for pos < n && run(p.f[pos]) {
				pos++
			}
			cut.add(pos)
			continue
		}
		ws := 0
		for pos+ws < n && p.f[pos+ws].space() {
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
		cut.add(pos)
	}
	return cut.lens, nil
}
