package tokenizer

import (
	"fmt"
	"sort"
	"strings"
)

// The single-class regexes of llama.cpp's multi-regex pre-tokenizers, as llama-vocab.cpp has
// them ("[\r\n]" holds a real CR and LF, as the C++ string does).
const (
	regexLineBreak        = "[\r\n]"
	regexNumber           = `\p{N}`
	regexNumbers          = `\p{N}+`
	regexThreeASCIIDigits = `[0-9][0-9][0-9]`
	regexSpaceLetters     = `\s?\p{L}+`
	regexSpacePunct       = `\s?\p{P}+`
	regexFalconPunct      = `[\p{P}\$\+<=>\^~\|` + "`" + `]+`
	regexDefaultPunct     = `[\p{P}\$\+<=>\^~\|]+`
	regexTrailingSpace    = `\s+$`
	deepseekCasedLetters  = "A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943"
	deepseekPunct         = "!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002"
	deepseekCJK           = "\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff"
	regexDeepseekLetters  = `\s?[` + deepseekCasedLetters + `]+`
	regexDeepseekPunct    = `\s?[` + deepseekPunct + `]+`
	regexDeepseekCJK      = `[` + deepseekCJK + `]+`
	falconSymbols         = "$+<=>^~|`"
	defaultSymbols        = "$+<=>^~|"
)

// The deepseek classes are written with escapes: several of their characters (U+1F7D,
// U+1FBE, U+1FD3, U+1FDB, U+2126 OHM SIGN, U+212A KELVIN SIGN) have canonical
// decompositions, and a normalizing editor would turn ranges such as U+1F5F–U+1F7D into
// reversed ones.

// handStages maps each regex with a hand-written stage to it, by its exact text: llama.cpp's
// form and, where it differs, Hugging Face's (which llama.cpp's unicode_regex_split_custom
// also recognizes for llama3).
var handStages = map[string]splitStage{
	regexGPT2:             gpt2Stage{},
	regexGPT2HF:           gpt2Stage{},
	regexLlama3:           llama3Stage{maxDigits: 3},
	regexLlama3HF:         llama3Stage{maxDigits: 3},
	regexQwen2:            llama3Stage{maxDigits: 1},
	regexQwen2HF:          llama3Stage{maxDigits: 1},
	regexLineBreak:        runStage{pattern: regexLineBreak, in: isLineBreak, min: 1, max: 1},
	regexNumber:           runStage{pattern: regexNumber, in: isNumber, min: 1, max: 1},
	regexNumbers:          runStage{pattern: regexNumbers, in: isNumber, min: 1},
	regexThreeASCIIDigits: runStage{pattern: regexThreeASCIIDigits, in: isASCIIDigit, min: 3, max: 3},
	regexSpaceLetters:     runStage{pattern: regexSpaceLetters, optionalSpace: true, in: isLetter, min: 1},
	regexSpacePunct:       runStage{pattern: regexSpacePunct, optionalSpace: true, in: isPunct, min: 1},
	regexFalconPunct:      runStage{pattern: regexFalconPunct, in: punctOrSymbols(falconSymbols), min: 1},
	regexDefaultPunct:     runStage{pattern: regexDefaultPunct, in: punctOrSymbols(defaultSymbols), min: 1},
	regexTrailingSpace:    trailingSpaceStage{},
	regexDeepseekLetters:  runStage{pattern: regexDeepseekLetters, optionalSpace: true, in: literalClass(deepseekCasedLetters), min: 1},
	regexDeepseekPunct:    runStage{pattern: regexDeepseekPunct, optionalSpace: true, in: literalClass(deepseekPunct), min: 1},
	regexDeepseekCJK:      runStage{pattern: regexDeepseekCJK, in: literalClass(deepseekCJK), min: 1},
}

// bpePreType is how llama.cpp runs byte-level BPE for one LLAMA_VOCAB_PRE_TYPE_*
// (llm_tokenizer_bpe's regex_exprs and the flags llama_vocab::impl::load sets for it).
type bpePreType struct {
	name    string   // the type whose regexes these are, lower case: "llama3", "qwen2", …
	regexes []string // applied in order, each to the pieces the previous ones left
	// ignoreMerges: a pre-token that is itself a vocab entry is that one token, whatever the
	// merges would make of it (llama.cpp's ignore_merges, Hugging Face's model.ignore_merges).
	ignoreMerges bool
	addBOS       bool // the default of tokenizer.ggml.add_bos_token
}

// The types, from llama.cpp's src/llama-vocab.cpp (ggml-org/llama.cpp 00ad355e).
var (
	preLlama3        = bpePreType{name: "llama3", regexes: []string{regexLlama3}, ignoreMerges: true, addBOS: true}
	preLlama3Regex   = bpePreType{name: "llama3", regexes: []string{regexLlama3}} // DBRX, Smaug, ChatGLM4: the regex only
	preQwen2         = bpePreType{name: "qwen2", regexes: []string{regexQwen2}}
	preGPT2          = bpePreType{name: "gpt-2", regexes: []string{regexGPT2}}
	preStarcoder     = bpePreType{name: "starcoder", regexes: []string{regexNumber, regexGPT2}}
	preFalcon        = bpePreType{name: "falcon", regexes: []string{regexFalconPunct, regexGPT2, regexThreeASCIIDigits}}
	preDefault       = bpePreType{name: "default", regexes: []string{regexDefaultPunct, regexGPT2, regexNumbers, regexThreeASCIIDigits}}
	preDeepseekLLM   = bpePreType{name: "deepseek-llm", regexes: []string{regexLineBreak, regexDeepseekLetters, regexDeepseekPunct, regexTrailingSpace, regexDeepseekCJK, regexNumbers}}
	preDeepseekCoder = bpePreType{name: "deepseek-coder", regexes: []string{regexLineBreak, regexSpaceLetters, regexSpacePunct, regexDeepseekCJK, regexNumber}}
)

// bpePreTypes maps each tokenizer.ggml.pre value that llama.cpp runs with one of the types
// above to it.
var bpePreTypes = func() map[string]*bpePreType {
	m := map[string]*bpePreType{}
	for _, g := range []struct {
		t     *bpePreType
		names []string
	}{
		{&preLlama3, []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}},
		{&preLlama3Regex, []string{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}},
		{&preQwen2, []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"}},
		{&preGPT2, []string{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert",
			"jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling"}},
		{&preStarcoder, []string{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"}},
		{&preFalcon, []string{"falcon"}},
		{&preDefault, []string{"default"}},
		{&preDeepseekLLM, []string{"deepseek-llm"}},
		{&preDeepseekCoder, []string{"deepseek-coder"}},
	} {
		for _, n := range g.names {
			m[n] = g.t
		}
	}
	return m
}()

// supportedPreTypes lists the tokenizer.ggml.pre values FromGGUF accepts, sorted.
func supportedPreTypes() string {
	names := make([]string, 0, len(bpePreTypes))
	for n := range bpePreTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// preTokenizerFor builds the stages of regexes, hand-written where the package has them;
// with allowRegexp2, the others run through regexp2, else they are an error.
func preTokenizerFor(name string, regexes []string, allowRegexp2 bool) (*preTokenizer, error) {
	pt := &preTokenizer{name: name}
	for _, re := range regexes {
		if st, ok := handStages[re]; ok {
			pt.stages = append(pt.stages, st)
			continue
		}
		if !allowRegexp2 {
			return nil, fmt.Errorf("regex %q has no hand-written splitter", re)
		}
		st, err := newRegexStage(re)
		if err != nil {
			return nil, err
		}
		pt.stages = append(pt.stages, st)
	}
	return pt, nil
}

// preTokenizer builds the type's stages. Every regex of every type has a hand-written stage
// (TestPreTypesAreHandWritten), so the error is only a safeguard.
func (t *bpePreType) preTokenizer() (*preTokenizer, error) {
	return preTokenizerFor(t.name, t.regexes, false)
}

// preTypeOfRegexes returns the name of the type whose regexes are the same stages as pt's
// (for a tokenizer.json: its Split patterns), or "custom".
func preTypeOfRegexes(pt *preTokenizer) string {
	got := strings.Join(pt.regexes(), "\x00")
	for _, t := range []*bpePreType{&preGPT2, &preLlama3, &preQwen2, &preStarcoder, &preFalcon, &preDeepseekLLM, &preDeepseekCoder, &preDefault} {
		if got == strings.Join(t.regexes, "\x00") {
			return t.name
		}
	}
	return "custom"
}

// gpt2PreTokenizer is GPT-2's pre-tokenizer, for vocabs that say no more than ByteLevel.
var gpt2PreTokenizer = &preTokenizer{name: preGPT2.name, stages: []splitStage{gpt2Stage{}}}
