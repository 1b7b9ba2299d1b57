package tokenizer

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Kind says which algorithm a Tokenizer runs.
type Kind int

const (
	// SentencePiece is SentencePiece BPE with byte fallback: GGUF tokenizer.ggml.model
	// "llama" (llama.cpp's LLAMA_VOCAB_TYPE_SPM).
	SentencePiece Kind = iota + 1
	// ByteLevelBPE is GPT-2 style byte-level BPE: GGUF tokenizer.ggml.model "gpt2" with one
	// of llama.cpp's pre-tokenizers (tokenizer.ggml.pre: gpt-2, llama-bpe, qwen2, …), or a
	// Hugging Face BPE model with a ByteLevel pre-tokenizer (after Split regexes or not).
	ByteLevelBPE
)

// String returns the kind's GGUF tokenizer.ggml.model name.
func (k Kind) String() string {
	switch k {
	case SentencePiece:
		return "llama"
	case ByteLevelBPE:
		return "gpt2"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// TokenType is a token's type as GGUF's tokenizer.ggml.token_type stores it (llama.cpp's
// llama_token_type).
type TokenType int32

// The token types of GGUF's tokenizer.ggml.token_type.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// String returns the type's lower-case name.
func (t TokenType) String() string {
	switch t {
	case TypeUndefined:
		return "undefined"
	case TypeNormal:
		return "normal"
	case TypeUnknown:
		return "unknown"
	case TypeControl:
		return "control"
	case TypeUserDefined:
		return "user-defined"
	case TypeUnused:
		return "unused"
	case TypeByte:
		return "byte"
	}
	return "TokenType(" + strconv.Itoa(int(t)) + ")"
}

// Tokenizer converts between text and token ids for one vocabulary. It is immutable after
// loading (its merge cache is guarded), so one Tokenizer serves any number of goroutines.
type Tokenizer struct {
	source string // the file it was loaded from, for errors
	kind   Kind

	tokens []string    // vocab text as stored, indexed by id
	types  []TokenType // indexed by id
	scores []float32   // SentencePiece merge scores, indexed by id
	toID   map[string]int
	text   []string // what each id decodes to (llama.cpp's token_to_piece with special=false)

	bos, eos, unk  int   // −1 when absent
	eog            []int // EndOfGeneration's ids
	addBOS, addEOS bool
	addSpacePrefix bool // SentencePiece: prefix raw text with a space, strip it when decoding
	// specials are the control, user-defined and unknown tokens, longest text first (llama.cpp's
	// cache_special_tokens): split out of raw text before encoding, the user-defined ones always,
	// the others when parsing special tokens.
	specials      []int
	byteID        [256]int
	ranks         map[[2]string]int // byte-level BPE merge ranks
	pre           *preTokenizer     // byte-level BPE pre-tokenizer
	hfPrefixSpace bool              // HF ByteLevel add_prefix_space
	ignoreMerges  bool              // a pre-token in the vocab is one token (llama.cpp's ignore_merges)
	cache         *bpeCache
}

// vocab is what a loader hands to build.
type vocab struct {
	kind           Kind
	tokens         []string
	types          []TokenType // nil: all normal
	scores         []float32   // nil: all zero
	merges         [][2]string // byte-level BPE, in rank order
	bos, eos, unk  int
	eog            []int // ids besides EOS that end a generation, where the file names them
	addBOS, addEOS bool
	addSpacePrefix bool
	pre            *preTokenizer // byte-level BPE; nil: GPT-2's
	hfPrefixSpace  bool
	ignoreMerges   bool
}

// build checks a loader's vocabulary and derives the lookup tables.
func build(source string, v vocab) (*Tokenizer, error) {
	n := len(v.tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: %s: the vocabulary is empty", source)
	}
	t := &Tokenizer{
		source: source, kind: v.kind,
		tokens: v.tokens, types: v.types, scores: v.scores,
		toID: make(map[string]int, n), text: make([]string, n),
		bos: v.bos, eos: v.eos, unk: v.unk,
		addBOS: v.addBOS, addEOS: v.addEOS,
		pre: v.pre, hfPrefixSpace: v.hfPrefixSpace, ignoreMerges: v.ignoreMerges,
	}
	if t.types == nil {
		t.types = make([]TokenType, n)
		for i := range t.types {
			t.types[i] = TypeNormal
		}
	}
	if t.scores == nil {
		t.scores = make([]float32, n)
	}
	for i, w := range t.tokens {
		if w == "" { // as llama.cpp does, so that "" never matches
			w = "[EMPTY_" + strconv.Itoa(i) + "]"
			t.tokens[i] = w
		}
		t.toID[w] = i // a later duplicate wins, as in llama.cpp's token_to_id
	}
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	switch v.kind {
	case SentencePiece:
		t.addSpacePrefix = v.addSpacePrefix
		for b := range 256 {
			if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
				t.byteID[b] = id
			} else if id, ok := t.toID[string([]byte{byte(b)})]; ok {
				t.byteID[b] = id
			}
		}
	case ByteLevelBPE:
		t.ranks = make(map[[2]string]int, len(v.merges))
		for r, m := range v.merges {
			if _, dup := t.ranks[m]; !dup { // the first rank wins, as llama.cpp's emplace
				t.ranks[m] = r
			}
		}
		for b := range 256 {
			if id, ok := t.toID[string(byteToRune[b])]; ok {
				t.byteID[b] = id
			}
		}
		t.cache = newBPECache()
		if t.pre == nil {
			t.pre = gpt2PreTokenizer
		}
	default:
		return nil, fmt.Errorf("tokenizer: %s: unknown tokenizer kind %v", source, v.kind)
	}
	for _, s := range []struct {
		name string
		id   int
	}{{"BOS", t.bos}, {"EOS", t.eos}, {"unknown", t.unk}} {
		if s.id < -1 || s.id >= n {
			return nil, fmt.Errorf("tokenizer: %s: %s token id %d is outside the vocabulary of %d tokens", source, s.name, s.id, n)
		}
	}
	for id := range t.tokens {
		var err error
		if t.text[id], err = t.pieceText(id); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", source, err)
		}
		if typ := t.types[id]; typ == TypeControl || typ == TypeUserDefined || typ == TypeUnknown {
			t.specials = append(t.specials, id)
		}
	}
	// llama.cpp sorts with std::sort, which leaves the order of equal lengths open; the id
	// order is as good and is the same every time.
	sort.SliceStable(t.specials, func(i, j int) bool {
		return len(t.tokens[t.specials[i]]) > len(t.tokens[t.specials[j]])
	})
	for _, id := range v.eog {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("tokenizer: %s: end-of-generation token id %d is outside the vocabulary of %d tokens", source, id, n)
		}
	}
	t.eog = endOfGeneration(t.tokens, t.eos, v.eog)
	return t, nil
}

// pieceText is what id decodes to, llama.cpp's token_to_piece(special=false): control,
// unknown, unused and undefined tokens give nothing, user-defined tokens their text.
func (t *Tokenizer) pieceText(id int) (string, error) {
	w := t.tokens[id]
	switch t.types[id] {
	case TypeUserDefined:
		return w, nil
	case TypeNormal:
		if t.kind == SentencePiece {
			return strings.ReplaceAll(w, "▁", " "), nil
		}
		return decodeByteLevel(w), nil
	case TypeByte:
		if t.kind != SentencePiece {
			return "", nil // llama.cpp's BPE detokenizer suppresses byte-typed tokens
		}
		if len(w) != 6 || !strings.HasPrefix(w, "<0x") || w[5] != '>' {
			return "", fmt.Errorf("token %d %q has type byte but is not <0xHH>", id, w)
		}
		b, err := strconv.ParseUint(w[3:5], 16, 8)
		if err != nil {
			return "", fmt.Errorf("token %d %q has type byte but is not <0xHH>", id, w)
		}
		return string([]byte{byte(b)}), nil
	}
	return "", nil
}

// Kind returns the tokenizer's algorithm.
func (t *Tokenizer) Kind() Kind { return t.kind }

// PreTokenizer names the regexes that split text before byte-level BPE: "gpt-2", "llama3",
// "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder" or "default", the llama.cpp
// type whose regexes they are (tokenizer.ggml.pre "mpt" runs "gpt-2", "smaug-bpe" and
// "llama-bpe" run "llama3"; so do a tokenizer.json's Split patterns when they are those
// regexes), or "custom" for other patterns. It is "" for SentencePiece.
func (t *Tokenizer) PreTokenizer() string {
	if t.pre == nil {
		return ""
	}
	return t.pre.name
}

// VocabSize returns the number of token ids, the valid ids being 0 to VocabSize()-1.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS returns the beginning-of-sequence token id, −1 when the vocab has none.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the end-of-sequence token id, −1 when the vocab has none.
func (t *Tokenizer) EOS() int { return t.eos }

// AddsBOS reports whether Encode(text, true) starts with BOS (tokenizer.ggml.add_bos_token).
func (t *Tokenizer) AddsBOS() bool { return t.addBOS }

// AddsEOS reports whether Encode(text, true) ends with EOS (tokenizer.ggml.add_eos_token).
func (t *Tokenizer) AddsEOS() bool { return t.addEOS }

// Piece returns id's vocabulary entry as stored ("▁Hello", "Ġworld", "<0x0A>", "<s>"), or ""
// when id is out of range.
func (t *Tokenizer) Piece(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// TokenText returns what id decodes to within a text (Decode's piece for it, no leading
// space stripped): how OpenAI's logprobs name a token. It is "" when id is out of range,
// and raw bytes that need not be valid UTF-8 (one byte of a character, say).
func (t *Tokenizer) TokenText(id int) string {
	if id < 0 || id >= len(t.text) {
		return ""
	}
	return t.text[id]
}

// Type returns id's token type, TypeUndefined when id is out of range.
func (t *Tokenizer) Type(id int) TokenType {
	if id < 0 || id >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// IsSpecial reports whether id is a control token (BOS, EOS, <|endoftext|>, …) or the
// unknown token: the tokens that decode to nothing (llama.cpp's LLAMA_TOKEN_ATTR_CONTROL |
// LLAMA_TOKEN_ATTR_UNKNOWN). Out-of-range ids are not special.
func (t *Tokenizer) IsSpecial(id int) bool {
	typ := t.Type(id)
	return typ == TypeControl || typ == TypeUnknown
}

// IsControl reports whether id is a control token.
func (t *Tokenizer) IsControl(id int) bool { return t.Type(id) == TypeControl }

// checkID returns an error naming id when it is not a token id.
func (t *Tokenizer) checkID(id int) error {
	if id < 0 || id >= len(t.tokens) {
		return fmt.Errorf("tokenizer: token id %d is outside the vocabulary [0, %d)", id, len(t.tokens))
	}
	return nil
}

// fragment is a piece of the input: raw text to tokenize, or a token split out of it.
type fragment struct {
	text string
	id   int // −1 for raw text
}

// fragments splits special tokens out of text, longest token first, as llama.cpp's
// tokenizer_st_partition: user-defined tokens always, control and unknown tokens only with
// parseSpecial.
func (t *Tokenizer) fragments(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	var present [256]bool // the bytes of text: a token whose first byte is absent cannot occur
	for i := 0; i < len(text); i++ {
		present[text[i]] = true
	}
	frags := []fragment{{text: text, id: -1}}
	var next []fragment
	for _, id := range t.specials {
		if typ := t.types[id]; !parseSpecial && typ != TypeUserDefined {
			continue
		}
		w := t.tokens[id]
		if !present[w[0]] {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			s := f.text
			for {
				i := strings.Index(s, w)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{text: s[:i], id: -1})
				}
				next = append(next, fragment{id: id})
				s = s[i+len(w):]
			}
			if s != "" {
				next = append(next, fragment{text: s, id: -1})
			}
		}
		frags, next = next, frags
	}
	return frags
}

// Encode turns text into token ids, as llama.cpp's llama_tokenize with parse_special false:
// control-token text such as "<s>" or "<|eot_id|>" is tokenized as plain text, user-defined
// tokens are matched first. With addSpecial, BOS is prepended when the vocab adds it
// (tokenizer.ggml.add_bos_token; default true for llama vocabs and the llama3 pre-tokenizer,
// false for other gpt2 ones) and EOS appended when it adds that. Text need not be valid
// UTF-8: SentencePiece falls back to byte tokens and byte-level BPE encodes the bytes
// themselves, so both round-trip through Decode, except that a byte-level vocab without the
// token of some byte drops that byte, as llama.cpp does (falcon's lacks several control
// characters). (For invalid UTF-8 llama.cpp differs: its SentencePiece takes a character's
// length from its first byte unchecked, and its byte-level BPE replaces invalid bytes with
// U+FFFD. For valid UTF-8 the ids are the same.)
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int, error) {
	return t.Tokenize(text, addSpecial, false)
}

// Tokenize is Encode with llama.cpp's parse_special: with parseSpecial, the text of control
// and unknown tokens ("<|begin_of_text|>", "<|im_start|>", "<s>") becomes those tokens, as a
// rendered chat template needs. As in llama.cpp, a BOS written in the text is kept even when
// addSpecial prepends one too.
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error) {
	out := make([]int, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		if t.bos < 0 {
			return nil, fmt.Errorf("tokenizer: %s: the vocab asks for BOS (add_bos_token) but has no BOS token", t.source)
		}
		out = append(out, t.bos)
	}
	prevSpecial := true // SentencePiece: prefix a space to the first fragment and after a token
	var err error
	for _, f := range t.fragments(text, parseSpecial) {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		switch t.kind {
		case SentencePiece:
			out, err = t.encodeSPM(f.text, t.addSpacePrefix && prevSpecial, out)
		case ByteLevelBPE:
			s := f.text
			if t.hfPrefixSpace && !strings.HasPrefix(s, " ") {
				s = " " + s
			}
			out, err = t.encodeBPE(s, out)
		}
		if err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS {
		if t.eos < 0 {
			return nil, fmt.Errorf("tokenizer: %s: the vocab asks for EOS (add_eos_token) but has no EOS token", t.source)
		}
		out = append(out, t.eos)
	}
	return out, nil
}

// stripsLeadingSpace reports whether decoding drops one leading space from the first token:
// the space that Encode's space prefix added (SentencePiece with add_space_prefix).
func (t *Tokenizer) stripsLeadingSpace() bool {
	return t.kind == SentencePiece && t.addSpacePrefix
}

// Decode turns ids into text as llama.cpp's llama_detokenize with remove_special and
// unparse_special false: SentencePiece "▁" becomes a space and byte tokens become their
// byte, byte-level BPE pieces map back to their bytes, control and unknown tokens give
// nothing, and with add_space_prefix one leading space is stripped from the first token
// only. So a leading BOS keeps the space of the token after it: Decode([BOS, "▁Hello"]) is
// " Hello", as in llama.cpp. Byte-level BPE text comes back byte for byte: llama.cpp's
// clean_spaces pass for gpt-2 vocabs (" ?" → "?", " 's" → "'s", as Hugging Face's
// clean_up_tokenization_spaces) is not applied. The result is raw bytes; it is not valid
// UTF-8 when the ids cut a character. An id outside the vocabulary is an error.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		if err := t.checkID(id); err != nil {
			return "", fmt.Errorf("%w (decode position %d)", err, i)
		}
		p := t.text[id]
		if i == 0 && t.stripsLeadingSpace() {
			p = strings.TrimPrefix(p, " ")
		}
		b.WriteString(p)
	}
	return b.String(), nil
}
