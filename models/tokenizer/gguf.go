package tokenizer

import (
	"fmt"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/tpslice/tpslice/models/format"
)

// The GGUF metadata keys FromGGUF reads.
const (
	keyModel       = "tokenizer.ggml.model"
	keyPre         = "tokenizer.ggml.pre"
	keyTokens      = "tokenizer.ggml.tokens"
	keyScores      = "tokenizer.ggml.scores"
	keyTokenType   = "tokenizer.ggml.token_type"
	keyMerges      = "tokenizer.ggml.merges"
	keyBOS         = "tokenizer.ggml.bos_token_id"
	keyEOS         = "tokenizer.ggml.eos_token_id"
	keyUNK         = "tokenizer.ggml.unknown_token_id"
	keyAddBOS      = "tokenizer.ggml.add_bos_token"
	keyAddEOS      = "tokenizer.ggml.add_eos_token"
	keyAddSpacePfx = "tokenizer.ggml.add_space_prefix"
)

// FromGGUF loads the tokenizer stored in a GGUF file's tokenizer.ggml.* metadata. The file
// may be vocab-only (no tensors) or a full model; tensor data is never read. Supported are
// tokenizer.ggml.model "llama" (SentencePiece) and "gpt2" (byte-level BPE) with a
// tokenizer.ggml.pre that llama.cpp runs with one of the regex lists of pretokenize_types.go:
// gpt-2, llama-bpe (llama3, llama-v3), qwen2, deepseek-llm, deepseek-coder, falcon,
// starcoder, refact, default and the names that share their regexes (dbrx, smaug-bpe, mpt,
// olmo, stablelm2, …). Any other value is an error naming it and the supported list; a
// missing one is too (llama.cpp would fall back to its "default" regexes with a warning).
// Errors name the file and the missing or malformed field.
//
// Defaults follow llama.cpp: for "llama", BOS 1, EOS 2, unknown 0, add_bos_token true,
// add_space_prefix true; for "gpt2", add_bos_token false except with the llama3
// pre-tokenizer, which also takes a pre-token that is a vocab entry as that one token
// (ignore_merges). A gpt2 vocab without bos_token_id/eos_token_id has none (−1), where
// llama.cpp would fall back to id 11.
func FromGGUF(path string) (*Tokenizer, error) {
	f, err := format.ParseGGUF(path) // the weights' parse rules; errors name the file
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return FromGGUFFile(path, f)
}

// FromGGUFFile is FromGGUF for a header already parsed (with its large arrays, the
// vocabulary's) from path, so that one parse serves the weights and the tokenizer.
func FromGGUFFile(path string, f *gguf.GGUFFile) (tok *Tokenizer, err error) {
	defer func() { // gguf-parser-go panics on some malformed values; turn that into an error
		if r := recover(); r != nil {
			tok, err = nil, fmt.Errorf("tokenizer: %s: malformed GGUF: %v", path, r)
		}
	}()
	md := ggufMeta{meta: format.NewGGUFMeta(path, f), path: path}

	model, ok, err := md.str(keyModel)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, md.missing(keyModel)
	}
	var v vocab
	switch model {
	case "llama":
		v = vocab{kind: SentencePiece, bos: 1, eos: 2, unk: 0, addBOS: true, addSpacePrefix: true}
	case "gpt2":
		v = vocab{kind: ByteLevelBPE, bos: -1, eos: -1, unk: -1}
		pre, ok, err := md.str(keyPre)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: %s missing: a gpt2 vocab needs its pre-tokenizer type (want one of %s)", path, keyPre, supportedPreTypes())
		}
		typ, ok := bpePreTypes[pre]
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: %s %q is not a supported pre-tokenizer type (want one of %s)", path, keyPre, pre, supportedPreTypes())
		}
		if v.pre, err = typ.preTokenizer(); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %s %q: %w", path, keyPre, pre, err)
		}
		v.ignoreMerges, v.addBOS = typ.ignoreMerges, typ.addBOS
	default:
		return nil, fmt.Errorf("tokenizer: %s: %s %q is not supported (want llama or gpt2)", path, keyModel, model)
	}

	if v.tokens, ok, err = md.strings(keyTokens); err != nil {
		return nil, err
	} else if !ok {
		return nil, md.missing(keyTokens)
	}
	n := len(v.tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: %s: %s is empty", path, keyTokens)
	}
	if v.scores, err = md.float32s(keyScores, n); err != nil {
		return nil, err
	}
	types, err := md.int32s(keyTokenType, n)
	if err != nil {
		return nil, err
	}
	if types != nil {
		v.types = make([]TokenType, n)
		for i, typ := range types {
			v.types[i] = TokenType(typ)
		}
	}
	if v.kind == ByteLevelBPE {
		merges, ok, err := md.strings(keyMerges)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, md.missing(keyMerges)
		}
		v.merges = make([][2]string, len(merges))
		for i, m := range merges {
			if v.merges[i], err = splitMerge(m); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: %s[%d]: %w", path, keyMerges, i, err)
			}
		}
	}
	for _, s := range []struct {
		key string
		id  *int
	}{{keyBOS, &v.bos}, {keyEOS, &v.eos}, {keyUNK, &v.unk}} {
		id, ok, err := md.tokenID(s.key, n)
		if err != nil {
			return nil, err
		}
		if ok {
			*s.id = id
		} else if *s.id >= n {
			*s.id = -1 // a llama.cpp default that this small vocab does not have
		}
	}
	for _, key := range ggufEndOfGenerationKeys {
		id, ok, err := md.tokenID(key, n)
		if err != nil {
			return nil, err
		}
		if ok {
			v.eog = append(v.eog, id)
		}
	}
	for _, s := range []struct {
		key string
		b   *bool
	}{{keyAddBOS, &v.addBOS}, {keyAddEOS, &v.addEOS}, {keyAddSpacePfx, &v.addSpacePrefix}} {
		b, ok, err := md.boolean(s.key)
		if err != nil {
			return nil, err
		}
		if ok {
			*s.b = b
		}
	}
	return build(path, v)
}

// splitMerge splits a merges entry "a b" at its first space after the first byte, as
// llama.cpp does.
func splitMerge(m string) ([2]string, error) {
	if len(m) > 1 {
		if i := strings.IndexByte(m[1:], ' '); i >= 0 {
			a, b := m[:i+1], m[i+2:]
			if b != "" {
				return [2]string{a, b}, nil
			}
		}
	}
	return [2]string{}, fmt.Errorf("merge %q is not two pieces separated by a space", m)
}

// ggufMeta reads the tokenizer's fields through format.GGUFMeta, prefixing its errors
// with "tokenizer: ", and checks what only a vocabulary can: that a per-token array has an
// element per token and that a token id names one.
type ggufMeta struct {
	meta format.GGUFMeta
	path string
}

func (m ggufMeta) missing(key string) error { return fmt.Errorf("tokenizer: %w", m.meta.Missing(key)) }

// prefixed prefixes a getter's error, passing its value and presence through.
func prefixed[T any](v T, ok bool, err error) (T, bool, error) {
	if err != nil {
		err = fmt.Errorf("tokenizer: %w", err)
	}
	return v, ok, err
}

func (m ggufMeta) str(key string) (string, bool, error)       { return prefixed(m.meta.String(key)) }
func (m ggufMeta) boolean(key string) (bool, bool, error)     { return prefixed(m.meta.Bool(key)) }
func (m ggufMeta) strings(key string) ([]string, bool, error) { return prefixed(m.meta.Strings(key)) }

// tokenID reads an integer token id and checks it is below n.
func (m ggufMeta) tokenID(key string, n int) (int, bool, error) {
	id, ok, err := prefixed(m.meta.Int64(key))
	if !ok {
		return 0, false, err
	}
	if id < 0 || id >= int64(n) {
		return 0, false, fmt.Errorf("tokenizer: %s: %s = %d is outside the vocabulary of %d tokens", m.path, key, id, n)
	}
	return int(id), true, nil
}

func (m ggufMeta) float32s(key string, n int) ([]float32, error) {
	v, ok, err := m.meta.Float32s(key)
	return perToken(m, key, n, v, ok, err)
}

func (m ggufMeta) int32s(key string, n int) ([]int32, error) {
	v, ok, err := m.meta.Int32s(key)
	return perToken(m, key, n, v, ok, err)
}

// perToken checks that the array read for key, when present, has n elements, one per
// token; an absent one is nil.
func perToken[T any](m ggufMeta, key string, n int, v []T, ok bool, err error) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if ok && len(v) != n {
		return nil, fmt.Errorf("tokenizer: %s: %s has %d elements but %s has %d", m.path, key, len(v), keyTokens, n)
	}
	return v, nil
}
