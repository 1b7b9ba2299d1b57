package tokenizer

import (
	"fmt"

	"github.com/dlclark/regexp2/v2"
)

// regexStage splits with a regex that has no hand-written stage, such as a Hugging Face
// Split pattern of a model llama.cpp does not know, run by regexp2 (a backtracking engine
// with look-around, .NET syntax; \p{…} and \s are Unicode's, as in the Rust and Oniguruma
// engines of Hugging Face tokenizers).
type regexStage struct {
	re *regexp2.Regexp
}

// newRegexStage compiles pattern. The backtracking stack is unbounded: a long run of one
// class (a megabyte of spaces against \s+(?!\S)) needs a slot per character, and the
// default limit would refuse such text instead of splitting it.
func newRegexStage(pattern string) (*regexStage, error) {
	re, err := regexp2.Compile(pattern, regexp2.OptionMaxBacktrackingStackSize(-1))
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pattern, err)
	}
	return &regexStage{re: re}, nil
}

func (s *regexStage) regex() string { return s.re.String() }

func (s *regexStage) split(p piece, lens []int) ([]int, error) {
	matches, err := s.re.FindAllRunesIndex(p.r, -1)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: pre-tokenizer regex %q: %w", s.re.String(), err)
	}
	cut := cutter{lens: lens}
	for _, m := range matches {
		cut.add(m[0])
		cut.add(m[1])
	}
	cut.add(p.len())
	return cut.lens, nil
}
