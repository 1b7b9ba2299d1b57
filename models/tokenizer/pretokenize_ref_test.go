package tokenizer

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/stretchr/testify/require"
)

// refPreTokenizer is the reference the hand-written stages are checked against: each regex
// evaluated by regexp2 the way llama.cpp's unicode_regex_split evaluates a regex it has no
// custom splitter for (unicode.cpp, unicode_regex_split_stl):
//
//   - a regex with \p{N}, \p{L}, \p{P}, \p{M}, \p{S} (or \p{Lu} …) runs on a "collapsed" copy
//     of the text, where each non-ASCII character is one code for its class (white space
//     \v, numbers U+00D1, letters U+00D2, punctuation U+00D3, marks U+00D4, symbols U+00D5,
//     the rest U+00D0), and each \p{X} becomes that code plus X's ASCII members;
//   - any other regex runs on the characters, each non-ASCII white-space one replaced by \v;
//   - each regex runs on each piece the previous ones left, the matches and the gaps between
//     them becoming pieces.
//
// std::regex's $ is the end of the input only, so $ becomes \z (.NET's $ also matches before
// a final newline).
type refPreTokenizer struct {
	stages []refStage
}

type refStage struct {
	re        *regexp2.Regexp
	collapsed bool
}

// The class codes and ASCII members of unicode_regex_split's k_ucat_cpt and k_ucat_map.
const (
	refOther  = 0xD0
	refNumber = 0xD1
	refLetter = 0xD2
	refPunct  = 0xD3
	refMark   = 0xD4
	refSymbol = 0xD5
)

var refCategories = map[string]string{
	`\p{N}`:  string(rune(refNumber)) + "0-9",
	`\p{L}`:  string(rune(refLetter)) + "A-Za-z",
	`\p{P}`:  string(rune(refPunct)) + `!-#%-*,-/:-;?-@\[-\]_\{\}`,
	`\p{M}`:  string(rune(refMark)),
	`\p{S}`:  string(rune(refSymbol)) + `\$\+<->^` + "`" + `\|`,
	`\p{Lu}`: string(rune(refLetter)) + "A-Za-z",
	`\p{Ll}`: string(rune(refLetter)) + "A-Za-z",
	`\p{Lt}`: string(rune(refLetter)) + "A-Za-z",
	`\p{Lm}`: string(rune(refLetter)) + "A-Za-z",
	`\p{Lo}`: string(rune(refLetter)) + "A-Za-z",
}

func newRefPreTokenizer(t testing.TB, regexes []string) *refPreTokenizer {
	t.Helper()
	ref := &refPreTokenizer{}
	for _, expr := range regexes {
		collapsed := false
		for cat := range refCategories {
			if strings.Contains(expr, cat) {
				collapsed = true
			}
		}
		pattern := expr
		if collapsed {
			pattern = refCollapseRegex(expr)
		}
		pattern = refDollarToEnd(pattern)
		re, err := regexp2.Compile(pattern, regexp2.OptionMaxBacktrackingStackSize(-1))
		require.NoError(t, err, "regex %q as %q", expr, pattern)
		ref.stages = append(ref.stages, refStage{re: re, collapsed: collapsed})
	}
	return ref
}

// refCollapseRegex rewrites \p{X} as unicode_regex_split does: "[code members]" outside a
// bracket expression, "code members" inside one.
func refCollapseRegex(expr string) string {
	var b strings.Builder
	inside := false
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c == '[' && (i == 0 || expr[i-1] != '\\') {
			inside = true
		} else if inside && c == ']' && expr[i-1] != '\\' {
			inside = false
		} else if c == '\\' && strings.HasPrefix(expr[i:], `\p{`) {
			if end := strings.IndexByte(expr[i:], '}'); end > 0 {
				if members, ok := refCategories[expr[i:i+end+1]]; ok {
					if inside {
						b.WriteString(members)
					} else {
						b.WriteString("[" + members + "]")
					}
					i += end
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// refDollarToEnd turns each unescaped $ outside a bracket expression into \z.
func refDollarToEnd(expr string) string {
	var b strings.Builder
	inside, escaped := false, false
	for _, r := range expr {
		switch {
		case escaped:
			escaped = false
		case r == '\\':
			escaped = true
		case r == '[':
			inside = true
		case r == ']':
			inside = false
		case r == '$' && !inside:
			b.WriteString(`\z`)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// refCollapse is unicode_regex_split's text_collapsed, from Go's Unicode tables.
func refCollapse(r rune) rune {
	switch {
	case r < utf8.RuneSelf:
		return r
	case unicode.IsSpace(r):
		return '\v'
	case unicode.IsNumber(r):
		return refNumber
	case unicode.IsLetter(r):
		return refLetter
	case unicode.IsPunct(r):
		return refPunct
	case unicode.IsMark(r):
		return refMark
	case unicode.IsSymbol(r):
		return refSymbol
	}
	return refOther
}

// split returns text's pieces as llama.cpp's std::regex path would cut them.
func (ref *refPreTokenizer) split(t testing.TB, text string) []string {
	t.Helper()
	runes := []rune(text) // an invalid byte is one U+FFFD, as in decodeText
	offs := make([]int, 0, len(runes)+1)
	for i := range text {
		offs = append(offs, i)
	}
	offs = append(offs, len(text))
	collapsed := make([]rune, len(runes))
	plain := make([]rune, len(runes))
	for i, r := range runes {
		collapsed[i] = refCollapse(r)
		plain[i] = r
		if r >= utf8.RuneSelf && unicode.IsSpace(r) {
			plain[i] = '\v'
		}
	}
	lens := []int{len(runes)}
	for _, st := range ref.stages {
		input := plain
		if st.collapsed {
			input = collapsed
		}
		var next []int
		pos := 0
		for _, n := range lens {
			matches, err := st.re.FindAllRunesIndex(input[pos:pos+n], -1)
			require.NoError(t, err)
			prev := 0
			for _, m := range matches {
				if m[0] > prev {
					next = append(next, m[0]-prev)
				}
				if m[1] > m[0] {
					next = append(next, m[1]-m[0])
				}
				prev = m[1]
			}
			if n > prev {
				next = append(next, n-prev)
			}
			pos += n
		}
		lens = next
	}
	words := []string{}
	pos := 0
	for _, n := range lens {
		words = append(words, text[offs[pos]:offs[pos+n]])
		pos += n
	}
	return words
}

// handSplit is pt.split with an empty result as an empty slice, to compare with the reference.
func handSplit(t testing.TB, pt *preTokenizer, text string) []string {
	t.Helper()
	words, err := pt.split(text)
	require.NoError(t, err)
	if words == nil {
		words = []string{}
	}
	return words
}
