package tokenizer

import (
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// TestPreTypesAreHandWritten: every regex of every pre-tokenizer type has a hand-written
// stage, and each stage reports the regex it was registered under (llama.cpp's form).
func TestPreTypesAreHandWritten(t *testing.T) {
	for name, typ := range bpePreTypes {
		pt, err := typ.preTokenizer()
		require.NoError(t, err, name)
		require.Equal(t, typ.regexes, pt.regexes(), name)
		for _, st := range pt.stages {
			_, isRegexp2 := st.(*regexStage)
			require.False(t, isRegexp2, "%s: %q", name, st.regex())
		}
	}
	for re, st := range handStages {
		switch re {
		case regexGPT2HF, regexLlama3HF, regexQwen2HF: // Hugging Face's spellings
		default:
			require.Equal(t, re, st.regex())
		}
	}
}

// TestPreTypeNames pins the names llama.cpp maps to each type (llama-vocab.cpp, at
// ggml-org/llama.cpp 00ad355e).
func TestPreTypeNames(t *testing.T) {
	for name, want := range map[string]string{
		"llama-bpe": "llama3", "llama3": "llama3", "llama-v3": "llama3", "falcon3": "llama3",
		"smaug-bpe": "llama3", "dbrx": "llama3", "chatglm-bpe": "llama3",
		"qwen2": "qwen2", "stablelm2": "qwen2", "megrez": "qwen2", "deepseek-r1-qwen": "qwen2",
		"gpt-2": "gpt-2", "mpt": "gpt-2", "olmo": "gpt-2", "jina-v2-code": "gpt-2", "phi-2": "gpt-2",
		"starcoder": "starcoder", "refact": "starcoder", "command-r": "starcoder", "smollm": "starcoder",
		"falcon": "falcon", "deepseek-llm": "deepseek-llm", "deepseek-coder": "deepseek-coder", "default": "default",
	} {
		typ, ok := bpePreTypes[name]
		require.True(t, ok, name)
		require.Equal(t, want, typ.name, name)
	}
	require.True(t, bpePreTypes["llama-bpe"].ignoreMerges && bpePreTypes["llama-bpe"].addBOS)
	require.False(t, bpePreTypes["smaug-bpe"].ignoreMerges || bpePreTypes["smaug-bpe"].addBOS, "smaug shares llama3's regex, not its flags")
	for _, name := range []string{"llama-spm", "tekken", "gpt-4o", "deepseek-v3", "GPT-2", ""} {
		_, ok := bpePreTypes[name]
		require.False(t, ok, "%q has other regexes (or none)", name)
	}
}

// TestASCIIClassesMatchLlamaCpp: for ASCII, the classes are those of llama.cpp's collapsed
// regexes (k_ucat_map): letters A-Za-z, numbers 0-9, punctuation !-#%-*,-/:-;?-@[-]_{}, and
// white space \t \n \v \f \r and space.
func TestASCIIClassesMatchLlamaCpp(t *testing.T) {
	in := func(r rune, set string) bool { return strings.ContainsRune(set, r) }
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	const punct = "!\"#%&'()*,-./:;?@[\\]_{}"
	for r := rune(0); r < 128; r++ {
		f := flagsOf(r)
		require.Equal(t, in(r, letters), f.letter(), "%q", r)
		require.Equal(t, '0' <= r && r <= '9', f.number(), "%q", r)
		require.Equal(t, in(r, punct), f.punct(), "%q", r)
		require.Equal(t, in(r, "\t\n\v\f\r "), f.space(), "%q", r)
	}
}

// preTokenizerInputs are the texts the differential tests split: llama.cpp's suite inputs,
// hand-made cases at the edges of each regex, and random strings over characters of every
// class the regexes tell apart.
func preTokenizerInputs(t testing.TB) []string {
	var inputs []string
	for _, s := range suites {
		for _, c := range loadSuite(t, s.file) {
			inputs = append(inputs, c.in)
		}
	}
	inputs = append(inputs,
		"", " ", "  ", "a", "a ", " a", "a  ", "  a", "a   b", "a\n b", "a \n", "a\n\n b", " \n \n x", "\r\n\r\n",
		"x\t\ty", "\t\n", "\n\t", "a\u3000b", "\u3000\u3000a", "a\u00a0\u00a0", "\u0085x", "x \u2003 y",
		"I've 'RE we'll 'S'LL'Ve 'd'D 'm'M 't'T 're", "''s '", "'", "a'", "'ſ 'K", "don't", "x'yz",
		"1", "12", "123", "1234", "1234567", "12 345", "1.5", "١٢٣٤", "１２３４", "½⅓", "Ⅻ", "a1b22c333d4444",
		"!!!", " !!!", "...\n", " ?\n\n", "(a)", "[x]{y}", "$+<=>^~|`", "a~b", "#@%&*", "_x_", "-y-",
		"你好世界", "我想在apple工作1314151天～", "가나다 라", "ࠀ", "一", "龥", "、。", "！？", "‘quoted’ “double”",
		"Ωmega Kelvin ιota ώmega", "µs", "ǅ", "ʰ", "ᾳ", "é\u0301", "a\u0301b", "\u200b\u200d", "😀😀 😀", "🦙.cpp",
		"\xff", "a\xffb", "\xe2\x82 x", "\uFFFD", "Hello, y'all! How are you 😁 ?",
		"    Hello\n    Hello", "\n =", "' era", "ied 4 ½ months", "Führer", "нещо на Български",
	)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		inputs = append(inputs, randomPreTokenizerText(rng, rng.IntN(24)))
	}
	return inputs
}

// preTokenizerAlphabet holds characters of every class the pre-tokenizer regexes tell apart.
var preTokenizerAlphabet = []string{
	"a", "z", "A", "Z", "s", "S", "t", "r", "e", "v", "m", "l", "L", "d", "D", "'", "'", "'",
	" ", " ", " ", "\t", "\n", "\n", "\r", "\v", "\f", "\u00a0", "\u3000", "\u2003", "\u0085", "\u2028", "\u1680",
	"0", "5", "9", "١", "１", "½", "Ⅻ", "²",
	"é", "ß", "ſ", "ǅ", "ʰ", "α", "Ω", "\u2126", "\u212a", "\u1fbe", "\u1f7d", "Я", "ա", "ᏸ", "ᲀ", "\U00010400",
	"中", "龥", "\u0800", "\u4e00", "가", "힣", "\ud7ff", "あ", "ア",
	".", ",", "!", "?", "(", ")", "[", "]", "{", "}", "_", "-", "@", "#", "%", "&", "*", "/", ":", ";", "\\", "\"",
	"$", "+", "<", "=", ">", "^", "~", "|", "`",
	"。", "、", "！", "／", "：", "～", "‘", "“", "‟", "…", "«", "¿",
	"\u0301", "\u200b", "\u200d", "\ufe0f", "😀", "🦙", "€", "©", "\x00", "\x7f", "\xff", "\uFFFD",
}

func randomPreTokenizerText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(preTokenizerAlphabet[rng.IntN(len(preTokenizerAlphabet))])
	}
	return b.String()
}

// TestPreTokenizersMatchRegex: for every tokenizer.ggml.pre name, the hand-written stages
// cut every input exactly as regexp2 evaluating llama.cpp's regex list does (the way
// llama.cpp's std::regex path does: refPreTokenizer).
func TestPreTokenizersMatchRegex(t *testing.T) {
	inputs := preTokenizerInputs(t)
	refs := map[*bpePreType]*refPreTokenizer{}
	names := make([]string, 0, len(bpePreTypes))
	for name := range bpePreTypes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		typ := bpePreTypes[name]
		t.Run(name, func(t *testing.T) {
			pt, err := typ.preTokenizer()
			require.NoError(t, err)
			ref := refs[typ]
			if ref == nil {
				ref = newRefPreTokenizer(t, typ.regexes)
				refs[typ] = ref
			}
			for _, in := range inputs {
				require.Equal(t, ref.split(t, in), handSplit(t, pt, in), "%s on %q", typ.name, in)
			}
		})
	}
}

// TestStagesMatchRegex checks each hand-written stage on its own against its regex, which
// points at the stage when TestPreTokenizersMatchRegex fails.
func TestStagesMatchRegex(t *testing.T) {
	inputs := preTokenizerInputs(t)
	for re, st := range handStages {
		if re != st.regex() {
			continue // a Hugging Face spelling of another stage's regex
		}
		pt := &preTokenizer{name: "stage", stages: []splitStage{st}}
		ref := newRefPreTokenizer(t, []string{re})
		for _, in := range inputs {
			require.Equal(t, ref.split(t, in), handSplit(t, pt, in), "%q on %q", re, in)
		}
	}
}

// TestRegexStage: a regex with no hand-written stage runs through regexp2 with Unicode
// classes, keeping matches and gaps, and handles long runs (an unbounded backtracking stack).
func TestRegexStage(t *testing.T) {
	pt, err := preTokenizerFor("custom", []string{`\p{Lu}\p{Ll}*`, `\d{2}`}, true)
	require.NoError(t, err)
	words, err := pt.split("HelloWorld éÉcole 12345")
	require.NoError(t, err)
	require.Equal(t, []string{"Hello", "World", " é", "École", " ", "12", "34", "5"}, words)

	pt, err = preTokenizerFor("custom", []string{regexGPT2HF + "|x"}, true)
	require.NoError(t, err)
	long := strings.Repeat(" ", 300000) + "a"
	words, err = pt.split(long)
	require.NoError(t, err)
	require.Equal(t, []string{long[:299999], " a"}, words)

	_, err = preTokenizerFor("custom", []string{`(unclosed`}, true)
	require.ErrorContains(t, err, `regex "(unclosed"`)
	_, err = preTokenizerFor("gguf", []string{`\w+`}, false)
	require.ErrorContains(t, err, "no hand-written splitter")
}

// TestHandStagesLinear: the hand-written stages stay linear on long runs that make a
// backtracking engine quadratic (\s+$ on spaces that do not end the piece).
func TestHandStagesLinear(t *testing.T) {
	pt, err := preDeepseekLLM.preTokenizer()
	require.NoError(t, err)
	text := strings.Repeat(" ", 1<<20) + "1" + strings.Repeat("\u3000", 1<<16) + "x"
	words, err := pt.split(text)
	require.NoError(t, err)
	require.Equal(t, text, strings.Join(words, ""))
}

// FuzzPreTokenizersMatchRegex: on any text, every pre-tokenizer type's hand-written stages
// cut as regexp2 evaluating llama.cpp's regexes does, into non-empty pieces that concatenate
// to the text.
func FuzzPreTokenizersMatchRegex(f *testing.F) {
	for _, in := range preTokenizerInputs(f) {
		f.Add(in)
	}
	types := []*bpePreType{&preGPT2, &preLlama3, &preQwen2, &preStarcoder, &preFalcon, &preDefault, &preDeepseekLLM, &preDeepseekCoder}
	hands := make([]*preTokenizer, len(types))
	refs := make([]*refPreTokenizer, len(types))
	for i, typ := range types {
		pt, err := typ.preTokenizer()
		require.NoError(f, err)
		hands[i], refs[i] = pt, newRefPreTokenizer(f, typ.regexes)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, typ := range types {
			got := handSplit(t, hands[i], s)
			for _, w := range got {
				if w == "" {
					t.Fatalf("%s: empty piece in %q", typ.name, s)
				}
			}
			if strings.Join(got, "") != s {
				t.Fatalf("%s: the pieces of %q join to %q", typ.name, s, strings.Join(got, ""))
			}
			if want := refs[i].split(t, s); !equalStrings(want, got) {
				t.Fatalf("%s on %q:\n regex %q\n hand  %q", typ.name, s, want, got)
			}
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestUnicodeVersion records the Unicode tables the classes come from: llama.cpp's
// unicode-data.cpp is generated from its own (newer) edition, so characters assigned since
// Unicode 15.0 may be classed differently.
func TestUnicodeVersion(t *testing.T) {
	require.NotEmpty(t, unicode.Version)
	t.Logf("Go's Unicode tables: %s", unicode.Version)
}
