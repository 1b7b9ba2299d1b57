package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dlclark/regexp2/v2"
)

// hfPreTokenizer is a pre_tokenizer entry: ByteLevel, Split, Digits or a Sequence of them.
type hfPreTokenizer struct {
	Type           string           `json:"type"`
	AddPrefixSpace bool             `json:"add_prefix_space"` // ByteLevel
	UseRegex       *bool            `json:"use_regex"`        // ByteLevel; absent is true
	PreTokenizers  []hfPreTokenizer `json:"pretokenizers"`    // Sequence
	Pattern        *struct {        // Split: one of the two
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string `json:"behavior"`          // Split
	Invert           bool   `json:"invert"`            // Split
	IndividualDigits bool   `json:"individual_digits"` // Digits
}

// hfPreTokenizerOf reads the pre_tokenizer: ByteLevel alone (GPT-2's regex unless use_regex
// is false), or a Sequence whose last entry is ByteLevel, after Split entries with behavior
// Isolated (both the matches and the text between them are pieces, as in llama.cpp) and
// Digits entries. The regexes run as stages in order; a regex the package has a hand-written
// splitter for (matched by its text: Llama 3's, Qwen2's, DeepSeek's, …) uses it, any other
// runs through regexp2. It returns the pre-tokenizer and ByteLevel's add_prefix_space.
func hfPreTokenizerOf(raw json.RawMessage) (*preTokenizer, bool, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, false, errors.New("missing (want ByteLevel)")
	}
	var top hfPreTokenizer
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, false, err
	}
	entries, inSequence := []hfPreTokenizer{top}, top.Type == "Sequence"
	if inSequence {
		entries = top.PreTokenizers
	}
	var regexes []string
	for i, p := range entries {
		where := p.Type // names the entry in errors
		if inSequence {
			where = fmt.Sprintf("pretokenizers[%d] (%s)", i, p.Type)
		}
		switch p.Type {
		case "Split":
			re, err := hfSplitRegex(p)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", where, err)
			}
			regexes = append(regexes, re)
		case "Digits":
			if p.IndividualDigits {
				regexes = append(regexes, regexNumber)
			} else {
				regexes = append(regexes, regexNumbers)
			}
		case "ByteLevel":
			if i != len(entries)-1 {
				return nil, false, fmt.Errorf("%s: ByteLevel must come last (the entries after it would see byte-level text)", where)
			}
			if p.AddPrefixSpace && len(regexes) > 0 {
				return nil, false, fmt.Errorf("%s: add_prefix_space after Split or Digits is not supported (it would prefix every piece)", where)
			}
			if p.UseRegex == nil || *p.UseRegex {
				regexes = append(regexes, regexGPT2HF)
			}
			pt, err := preTokenizerFor("custom", regexes, true)
			if err != nil {
				return nil, false, err
			}
			pt.name = preTypeOfRegexes(pt)
			return pt, p.AddPrefixSpace, nil
		default:
			return nil, false, fmt.Errorf("%s: type %q is not supported (want ByteLevel, alone or last in a Sequence of Split and Digits)", where, p.Type)
		}
	}
	return nil, false, errors.New("no ByteLevel entry (want ByteLevel, alone or last in a Sequence of Split and Digits)")
}

// hfSplitRegex returns a Split entry's pattern as a regex, checking that the entry keeps
// matches and gaps as pieces of their own (behavior Isolated, not inverted).
func hfSplitRegex(p hfPreTokenizer) (string, error) {
	if p.Behavior != "Isolated" {
		return "", fmt.Errorf("behavior %q is not supported (want Isolated)", p.Behavior)
	}
	if p.Invert {
		return "", errors.New("invert true is not supported")
	}
	switch {
	case p.Pattern == nil:
		return "", errors.New("pattern missing")
	case p.Pattern.Regex != nil:
		return *p.Pattern.Regex, nil
	case p.Pattern.String != nil:
		return regexp2.Escape(*p.Pattern.String), nil
	}
	return "", errors.New("pattern has neither Regex nor String")
}
