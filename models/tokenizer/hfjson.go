package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// hfTokenizerJSON is the part of a Hugging Face tokenizer.json that FromHFTokenizerJSON reads.
type hfTokenizerJSON struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type                    string          `json:"type"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
		UnkToken                *string         `json:"unk_token"`
		ByteFallback            bool            `json:"byte_fallback"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		IgnoreMerges            bool            `json:"ignore_merges"`
	} `json:"model"`
}

// hfPostProcessor is a post_processor entry: TemplateProcessing, or a Sequence holding one.
type hfPostProcessor struct {
	Type       string            `json:"type"`
	Processors []hfPostProcessor `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
}

// hfTokenizerConfig is the part of a sibling tokenizer_config.json that names BOS and EOS.
type hfTokenizerConfig struct {
	BOSToken    json.RawMessage `json:"bos_token"`
	EOSToken    json.RawMessage `json:"eos_token"`
	AddBOSToken *bool           `json:"add_bos_token"`
	AddEOSToken *bool           `json:"add_eos_token"`
}

// FromHFTokenizerJSON loads a Hugging Face tokenizer.json holding a byte-level BPE model
// (model.type BPE; no normalizer) whose pre_tokenizer is ByteLevel with the GPT-2 regex, such
// as GPT-2's, or a Sequence of Split regexes (behavior Isolated) and Digits ending in
// ByteLevel, such as Llama 3's, Qwen2's or DeepSeek's (hfjson_pretokenizer.go). Added tokens
// marked special become control tokens, the others user-defined tokens (matched in text
// before BPE). BOS and EOS come from a tokenizer_config.json next to the file when there is
// one, else from a TemplateProcessing post_processor (which also says whether they are
// added), else from well-known names ("<s>", "</s>", "<|endoftext|>", …). Errors name the
// file and the field.
func FromHFTokenizerJSON(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var tj hfTokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: not a tokenizer.json: %w", path, err)
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("tokenizer: %s: %s: %s", path, field, fmt.Sprintf(format, args...))
	}

	switch {
	case tj.Model.Type == "BPE", tj.Model.Type == "" && tj.Model.Merges != nil:
	case tj.Model.Type == "":
		return nil, bad("model.type", "missing")
	default:
		return nil, bad("model.type", "%q is not supported (want BPE)", tj.Model.Type)
	}
	if tj.Model.ByteFallback {
		return nil, bad("model.byte_fallback", "SentencePiece-style BPE with byte fallback is not supported from tokenizer.json; load the model's GGUF")
	}
	if p := tj.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, bad("model.continuing_subword_prefix", "%q is not supported", *p)
	}
	if p := tj.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, bad("model.end_of_word_suffix", "%q is not supported", *p)
	}
	if n := bytes.TrimSpace(tj.Normalizer); len(n) > 0 && !bytes.Equal(n, []byte("null")) {
		return nil, bad("normalizer", "%s is not supported (byte-level BPE uses none)", n)
	}
	v := vocab{kind: ByteLevelBPE, bos: -1, eos: -1, unk: -1, ignoreMerges: tj.Model.IgnoreMerges}
	if v.pre, v.hfPrefixSpace, err = hfPreTokenizerOf(tj.PreTokenizer); err != nil {
		return nil, bad("pre_tokenizer", "%v", err)
	}

	if len(tj.Model.Vocab) == 0 {
		return nil, bad("model.vocab", "missing or empty")
	}
	size := 0
	for _, id := range tj.Model.Vocab {
		size = max(size, id+1)
	}
	for _, at := range tj.AddedTokens {
		size = max(size, at.ID+1)
	}
	v.tokens = make([]string, size)
	v.types = make([]TokenType, size)
	set := make([]bool, size)
	assign := func(field, w string, id int) error {
		if id < 0 {
			return bad(field, "token %q has negative id %d", w, id)
		}
		if set[id] && v.tokens[id] != w {
			return bad(field, "id %d is both %q and %q", id, v.tokens[id], w)
		}
		v.tokens[id], set[id] = w, true
		return nil
	}
	for w, id := range tj.Model.Vocab {
		if err := assign("model.vocab", w, id); err != nil {
			return nil, err
		}
		v.types[id] = TypeNormal
	}
	for i, at := range tj.AddedTokens {
		if err := assign(fmt.Sprintf("added_tokens[%d]", i), at.Content, at.ID); err != nil {
			return nil, err
		}
		v.types[at.ID] = TypeUserDefined
		if at.Special {
			v.types[at.ID] = TypeControl
		}
	}
	for id, ok := range set {
		if !ok {
			return nil, bad("model.vocab", "no token has id %d (ids must run from 0 to %d)", id, size-1)
		}
	}
	if v.merges, err = hfMerges(tj.Model.Merges); err != nil {
		return nil, bad("model.merges", "%v", err)
	}
	ids := make(map[string]int, size)
	for id, w := range v.tokens {
		ids[w] = id
	}
	if u := tj.Model.UnkToken; u != nil && *u != "" {
		id, ok := ids[*u]
		if !ok {
			return nil, bad("model.unk_token", "%q is not in the vocab", *u)
		}
		v.unk = id
		v.types[id] = TypeUnknown
	}
	if err := hfSpecialTokens(path, tj.PostProcessor, ids, &v); err != nil {
		return nil, err
	}
	return build(path, v)
}

// hfMerges reads model.merges, either ["a b", …] or [["a", "b"], …].
func hfMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing")
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, m := range strs {
			if out[i], err = splitMerge(m); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("want a list of \"a b\" strings or of [a, b] pairs")
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 || p[0] == "" || p[1] == "" {
			return nil, fmt.Errorf("[%d]: %q is not a pair of pieces", i, p)
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

// hfSpecialTokens finds BOS and EOS and whether Encode adds them.
func hfSpecialTokens(path string, post json.RawMessage, ids map[string]int, v *vocab) error {
	lookup := func(field, name string) (int, error) {
		id, ok := ids[name]
		if !ok {
			return -1, fmt.Errorf("tokenizer: %s: %s: %q is not in the vocab", path, field, name)
		}
		return id, nil
	}
	var addBOS, addEOS *bool

	// 1. A TemplateProcessing post-processor: special tokens around $A.
	var pp hfPostProcessor
	if len(post) > 0 && json.Unmarshal(post, &pp) == nil {
		if pp.Type == "Sequence" {
			for _, p := range pp.Processors {
				if p.Type == "TemplateProcessing" {
					pp = p
					break
				}
			}
		}
		if pp.Type == "TemplateProcessing" {
			seenA, yes := false, true
			for _, it := range pp.Single {
				switch {
				case it.Sequence != nil:
					seenA = true
				case it.SpecialToken != nil && !seenA && v.bos < 0:
					id, err := lookup("post_processor.single", it.SpecialToken.ID)
					if err != nil {
						return err
					}
					v.bos, addBOS = id, &yes
				case it.SpecialToken != nil && seenA && v.eos < 0:
					id, err := lookup("post_processor.single", it.SpecialToken.ID)
					if err != nil {
						return err
					}
					v.eos, addEOS = id, &yes
				}
			}
		}
	}

	// 2. tokenizer_config.json next to the file overrides.
	cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
	data, err := os.ReadFile(cfgPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("tokenizer: %w", err)
	default:
		var cfg hfTokenizerConfig
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("tokenizer: %s: %w", cfgPath, err)
		}
		for _, s := range []struct {
			field string
			raw   json.RawMessage
			id    *int
		}{{"bos_token", cfg.BOSToken, &v.bos}, {"eos_token", cfg.EOSToken, &v.eos}} {
			name, ok := hfTokenName(s.raw)
			if !ok {
				continue
			}
			id, ok := ids[name]
			if !ok {
				return fmt.Errorf("tokenizer: %s: %s: %q is not in the vocab of %s", cfgPath, s.field, name, path)
			}
			*s.id = id
		}
		if cfg.AddBOSToken != nil {
			addBOS = cfg.AddBOSToken
		}
		if cfg.AddEOSToken != nil {
			addEOS = cfg.AddEOSToken
		}
	}

	// 3. Well-known names.
	if v.bos < 0 {
		v.bos = firstOf(ids, "<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>")
	}
	if v.eos < 0 {
		v.eos = firstOf(ids, "</s>", "<|end_of_text|>", "<eos>", "<|endoftext|>")
	}
	if id, ok := ids["<|endoftext|>"]; ok && v.bos < 0 && v.eos == id {
		v.bos = v.eos // GPT-2: <|endoftext|> is both, and is not added
	}
	if addBOS != nil {
		v.addBOS = *addBOS
	}
	if addEOS != nil {
		v.addEOS = *addEOS
	}
	return nil
}

// hfTokenName reads a tokenizer_config.json token: a string or {"content": …}.
func hfTokenName(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, true
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != "" {
		return obj.Content, true
	}
	return "", false
}

func firstOf(ids map[string]int, names ...string) int {
	for _, n := range names {
		if id, ok := ids[n]; ok {
			return id
		}
	}
	return -1
}
