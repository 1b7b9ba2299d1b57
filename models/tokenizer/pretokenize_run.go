package tokenizer

import (
	"sort"
	"unicode/utf8"
)

// runStage splits with a regex of the form
//
//	\s?C{min,max}
//
// (the \s? only with optionalSpace; max 0 is unbounded): an optional white-space character,
// then a run of characters of one class C. It is searched as a backtracking engine does,
// leftmost first: at each position the match with the space is tried before the one
// without, and a position where neither matches is left to the gap. Most stages of the
// multi-regex pre-tokenizers (deepseek, falcon, starcoder, …) have this form.
type runStage struct {
	pattern       string
	optionalSpace bool
	in            func(r rune, f charFlags) bool
	min, max      int
}

func (s runStage) regex() string { return s.pattern }

func (s runStage) split(p piece, lens []int) ([]int, error) {
	n := p.len()
	cut := cutter{lens: lens}
	// run returns the length of the greedy C{min,max} at i, or −1 when it does not match.
	run := func(i int) int {
		k := 0
		for i+k < n && (s.max == 0 || k < s.max) && s.in(p.r[i+k], p.f[i+k]) {
			k++
		}
		if k < s.min {
			return -1
		}
		return k
	}
	for pos := 0; pos < n; {
		if s.optionalSpace && p.f[pos].space() {
			if k := run(pos + 1); k >= 0 {
				cut.add(pos)
				pos += 1 + k
				cut.add(pos)
				continue
			}
		}
		if k := run(pos); k > 0 {
			cut.add(pos)
			pos += k
			cut.add(pos)
			continue
		}
		pos++
	}
	cut.add(n)
	return cut.lens, nil
}

// trailingSpaceStage splits with
//
//	\s+$
//
// that is, it cuts a piece's trailing white space off it (the leftmost match is where that
// run begins).
type trailingSpaceStage struct{}

func (trailingSpaceStage) regex() string { return `\s+$` }

func (trailingSpaceStage) split(p piece, lens []int) ([]int, error) {
	n := p.len()
	start := n
	for start > 0 && p.f[start-1].space() {
		start--
	}
	cut := cutter{lens: lens}
	cut.add(start)
	cut.add(n)
	return cut.lens, nil
}

// The character classes of the run stages. In std::regex, \p{…} is llama.cpp's: it runs
// such a regex on a copy of the text where each non-ASCII character is replaced by one byte
// for its class, so \p{L} is exactly Unicode's letters, and so on.

func isNumber(_ rune, f charFlags) bool { return f.number() }
func isLetter(_ rune, f charFlags) bool { return f.letter() }
func isPunct(_ rune, f charFlags) bool  { return f.punct() }
func isLineBreak(r rune, _ charFlags) bool {
	return r == '\r' || r == '\n'
}
func isASCIIDigit(r rune, _ charFlags) bool { return '0' <= r && r <= '9' }

// punctOrSymbols is [\p{P}…] with the listed ASCII symbols, as in falcon's [\p{P}\$\+<=>\^~\|`].
func punctOrSymbols(symbols string) func(rune, charFlags) bool {
	var ascii [utf8.RuneSelf]bool
	for i := 0; i < len(symbols); i++ {
		ascii[symbols[i]] = true
	}
	return func(r rune, f charFlags) bool {
		return f.punct() || (r < utf8.RuneSelf && ascii[r])
	}
}

// literalClass is a bracket expression of literal characters and ranges, such as
// deepseek's [一-龥ࠀ-一가-퟿] (body is what is between the brackets; no escapes). llama.cpp
// runs such a regex with std::wregex on the characters themselves, having first replaced
// each non-ASCII white-space character by \v (std::wregex's \s knows only ASCII), so
// non-ASCII white space never matches a class, even one whose range holds it (U+3000 in
// ࠀ-一).
func literalClass(body string) func(rune, charFlags) bool {
	type span struct{ lo, hi rune }
	var spans []span
	rs := []rune(body)
	for i := 0; i < len(rs); i++ {
		lo, hi := rs[i], rs[i]
		if i+2 < len(rs) && rs[i+1] == '-' {
			hi = rs[i+2]
			i += 2
		}
		spans = append(spans, span{lo, hi})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	merged := spans[:0]
	for _, s := range spans { // merge overlapping spans, so that one binary search decides
		if k := len(merged) - 1; k >= 0 && s.lo <= merged[k].hi+1 {
			merged[k].hi = max(merged[k].hi, s.hi)
			continue
		}
		merged = append(merged, s)
	}
	spans = merged
	var ascii [utf8.RuneSelf]bool
	for _, s := range spans {
		for r := s.lo; r <= s.hi && r < utf8.RuneSelf; r++ {
			ascii[r] = true
		}
	}
	return func(r rune, f charFlags) bool {
		if r < utf8.RuneSelf {
			return ascii[r]
		}
		if f.space() {
			return false
		}
		i := sort.Search(len(spans), func(i int) bool { return spans[i].lo > r }) - 1
		return i >= 0 && r <= spans[i].hi
	}
}
