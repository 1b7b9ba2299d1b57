package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stories260KTokenizer returns the path of llama2.c's tok512.bin in the shared model
// directory (../../../shared/models/stories260K from this package), skipping the test when
// it is absent.
func stories260KTokenizer(t testing.TB) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "models", "stories260K", "tok512.bin")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared model file %s is absent (it lives in ../shared next to the repository): %v", p, err)
	}
	return p
}

// llama2cPiece is one record of a llama2.c tokenizer file.
type llama2cPiece struct {
	score float32
	piece string
}

// llama2cFile writes a llama2.c tokenizer file: max_token_length, then score, length, bytes
// per piece.
func llama2cFile(maxLen int32, pieces []llama2cPiece) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(maxLen))
	for _, p := range pieces {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p.score))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(p.piece)))
		b = append(b, p.piece...)
	}
	return b
}

// smallLlama2C is a llama2.c vocab laid out as tokenizer.py writes one: <unk>, BOS, EOS, the
// 256 byte tokens, then merges with spaces stored as plain spaces.
func smallLlama2C() []llama2cPiece {
	pieces := []llama2cPiece{{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}}
	for b := range 256 {
		pieces = append(pieces, llama2cPiece{0, fmt.Sprintf("<0x%02X>", b)})
	}
	for i, p := range []string{" h", "el", " hel", "lo", " hello", " ", "h", "e", "l", "o", "w", "r", "d"} {
		pieces = append(pieces, llama2cPiece{-float32(i), p})
	}
	return pieces
}

// storedPieces returns the vocab entries of ids.
func storedPieces(tok *Tokenizer, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Piece(id)
	}
	return out
}

// parseIDs reads space-separated ids.
func parseIDs(t *testing.T, s string) []int {
	t.Helper()
	var ids []int
	for _, f := range strings.Fields(s) {
		id, err := strconv.Atoi(f)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// The reference of ../shared/models/stories260K/README.md: run.c's encoding of the prompt,
// its next 64 greedy ids, and the text of all of them (a newline, id 13 <0x0A>, after
// "too high.").
const (
	stories260KPrompt    = "Once upon a time"
	stories260KPromptIDs = "1 403 407 261 378"
	stories260KGreedyIDs = `432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 408 419 292 411 322
265 282 295 433 426 385 328 432 358 394 261 370 432 352 266 268 388 426 338 391 266 267
337 335 312 432 398 312 286 267 414 270 333 415 426 13 438 310 439 419 357 336`
	stories260KText = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said"
)

func TestLlama2CStories260KLayout(t *testing.T) {
	tok, err := FromLlama2C(stories260KTokenizer(t))
	require.NoError(t, err)
	require.Equal(t, SentencePiece, tok.Kind())
	require.Equal(t, 512, tok.VocabSize())
	require.Equal(t, 1, tok.BOS())
	require.Equal(t, 2, tok.EOS())
	require.True(t, tok.AddsBOS())
	require.False(t, tok.AddsEOS())
	require.Equal(t, TypeUnknown, tok.Type(0))
	require.Equal(t, TypeControl, tok.Type(1))
	require.Equal(t, TypeControl, tok.Type(2))
	require.Equal(t, "\n<s>\n", tok.Piece(1))
	for b := range 256 {
		require.Equal(t, TypeByte, tok.Type(3+b), "id %d", 3+b)
		require.Equal(t, fmt.Sprintf("<0x%02X>", b), tok.Piece(3+b))
	}
	require.Equal(t, TypeNormal, tok.Type(259))
	require.Equal(t, "▁t", tok.Piece(259), "tokenizer.py's spaces are SentencePiece's ▁ again")
	require.Equal(t, "▁Once", tok.Piece(403))
}

func TestLlama2CStories260KEncode(t *testing.T) {
	tok, err := FromLlama2C(stories260KTokenizer(t))
	require.NoError(t, err)
	ids, err := tok.Encode(stories260KPrompt, true)
	require.NoError(t, err)
	require.Equal(t, parseIDs(t, stories260KPromptIDs), ids, "pieces %q", pieces(tok, ids))
	ids, err = tok.Encode("", true)
	require.NoError(t, err)
	require.Equal(t, []int{1}, ids, "run.c adds no dummy prefix to empty text")
}

// TestLlama2CStories260KDecode decodes the prompt and the greedy ids whole and one at a
// time. BOS is left out: this package decodes as llama.cpp does, stripping the space prefix
// from the first token only, so after a BOS the " Once" keeps its space, where run.c strips a
// space after BOS.
func TestLlama2CStories260KDecode(t *testing.T) {
	tok, err := FromLlama2C(stories260KTokenizer(t))
	require.NoError(t, err)
	prompt := parseIDs(t, stories260KPromptIDs)
	greedy := parseIDs(t, stories260KGreedyIDs)
	require.Len(t, greedy, 64)
	require.Equal(t, TypeByte, tok.Type(13))
	require.Equal(t, "<0x0A>", tok.Piece(13))

	ids := append(append([]int{}, prompt[1:]...), greedy...)
	got, err := tok.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, stories260KText, got)

	withBOS, err := tok.Decode(append([]int{tok.BOS()}, ids...))
	require.NoError(t, err)
	require.Equal(t, " "+stories260KText, withBOS, "llama.cpp's rule: the token after BOS keeps its space")

	st := tok.NewStream()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(st.Add(id))
	}
	b.WriteString(st.Flush())
	require.NoError(t, st.Err())
	require.Equal(t, stories260KText, b.String())
}

// TestLlama2CStories260KRoundTrip: Decode(Encode(s)) is s, and Encode with BOS gives the ids
// of run.c's encode (runCEncode), byte fallback included.
func TestLlama2CStories260KRoundTrip(t *testing.T) {
	tok, err := FromLlama2C(stories260KTokenizer(t))
	require.NoError(t, err)
	for _, s := range []string{
		stories260KText,
		"The cat sat on the mat.",
		"Tom and Sue went to the shop, and they bought 3 red apples!",
		"  Two leading spaces, a tab\tand a trailing space ",
		"\"Why?\" asked Ben.\n\nMom smiled.",
		"Zoë's naïve café: bytes for what the 512 pieces lack — ok? 日本",
	} {
		ids, err := tok.Encode(s, false)
		require.NoError(t, err)
		got, err := tok.Decode(ids)
		require.NoError(t, err)
		require.Equal(t, s, got, "pieces %q", pieces(tok, ids))
		withBOS, err := tok.Encode(s, true)
		require.NoError(t, err)
		require.Equal(t, runCEncode(tok, s), withBOS, "run.c's encode of %q", s)
	}
}

// runCEncode is llama2.c run.c's encode(text, bos=1, eos=0), line for line, on the pieces as
// the file stores them (spaces, not "▁"): BOS; the " " token for non-empty text; each UTF-8
// character's token, or byte tokens (id byte+3) for one outside the vocab; then, while any
// adjacent pair concatenates to a piece, replace the pair of best score (the first on ties).
// It is quadratic, and a reference only.
func runCEncode(tok *Tokenizer, text string) []int {
	vocab := make([]string, tok.VocabSize())
	lookup := make(map[string]int, len(vocab))
	for id := range vocab {
		vocab[id] = strings.ReplaceAll(tok.Piece(id), "▁", " ")
		lookup[vocab[id]] = id
	}
	ids := []int{llama2cBOS}
	if text != "" {
		ids = append(ids, lookup[" "])
	}
	for _, r := range text {
		if id, ok := lookup[string(r)]; ok {
			ids = append(ids, id)
			continue
		}
		for _, b := range []byte(string(r)) {
			ids = append(ids, int(b)+3)
		}
	}
	for {
		bestScore, bestID, bestIdx := float32(-1e10), -1, -1
		for i := 0; i+1 < len(ids); i++ {
			if id, ok := lookup[vocab[ids[i]]+vocab[ids[i+1]]]; ok && tok.scores[id] > bestScore {
				bestScore, bestID, bestIdx = tok.scores[id], id, i
			}
		}
		if bestIdx < 0 {
			return ids
		}
		ids[bestIdx] = bestID
		ids = append(ids[:bestIdx+1], ids[bestIdx+2:]...)
	}
}

func TestLlama2CLoad(t *testing.T) {
	tok, err := Load(stories260KTokenizer(t))
	require.NoError(t, err)
	require.Equal(t, 512, tok.VocabSize())

	dir := t.TempDir()
	bin := filepath.Join(dir, "tokenizer.bin")
	require.NoError(t, os.WriteFile(bin, llama2cFile(7, smallLlama2C()), 0o644))
	tok, err = Load(bin)
	require.NoError(t, err)
	ids, err := tok.Encode("hello", false)
	require.NoError(t, err)
	require.Equal(t, []string{"▁hello"}, storedPieces(tok, ids))

	notBin := filepath.Join(dir, "tokenizer.dat")
	require.NoError(t, os.WriteFile(notBin, llama2cFile(7, smallLlama2C()), 0o644))
	_, err = Load(notBin)
	require.ErrorContains(t, err, "neither a GGUF file nor a tokenizer.json")
}

func TestLlama2CSynthetic(t *testing.T) {
	tok, err := FromLlama2CBytes("small.bin", llama2cFile(7, smallLlama2C()))
	require.NoError(t, err)
	ids, err := tok.Encode("hello world", true)
	require.NoError(t, err)
	require.Equal(t, []string{"\n<s>\n", "▁hello", "▁", "w", "o", "r", "l", "d"}, storedPieces(tok, ids))
	got, err := tok.Decode(ids[1:])
	require.NoError(t, err)
	require.Equal(t, "hello world", got)
	ids, err = tok.Encode("hé", false)
	require.NoError(t, err)
	require.Equal(t, []string{"▁h", "<0xC3>", "<0xA9>"}, storedPieces(tok, ids), "byte fallback")
}

func TestLlama2CErrors(t *testing.T) {
	good := llama2cFile(7, smallLlama2C())
	withRecord := func(score uint32, length int32, rest string) []byte {
		b := append([]byte{}, good...)
		b = binary.LittleEndian.AppendUint32(b, score)
		b = binary.LittleEndian.AppendUint32(b, uint32(length))
		return append(b, rest...)
	}
	last := len(smallLlama2C()) // the index of a record appended to good
	for _, c := range []struct {
		name string
		data []byte
		want []string
	}{
		{"empty", nil, []string{"the file is empty", "token 0"}},
		{"short header", []byte{7, 0}, []string{"2 bytes", "token 0"}},
		{"header only", good[:4], []string{"token 0 missing"}},
		{"truncated score", append(append([]byte{}, good...), 0, 0), []string{fmt.Sprintf("token %d ", last), "truncated"}},
		{"truncated length", withRecord(0, 3, "ab")[:len(good)+6], []string{fmt.Sprintf("token %d ", last), "truncated"}},
		{"length past EOF", withRecord(0, 5, "ab"), []string{fmt.Sprintf("token %d ", last), "length 5 runs past the end", "2 bytes left"}},
		{"negative length", withRecord(0, -1, "ab"), []string{fmt.Sprintf("token %d ", last), "length -1 is negative"}},
		{"length above max", withRecord(0, 8, "abcdefgh"), []string{fmt.Sprintf("token %d ", last), "length 8 exceeds max_token_length 7"}},
		{"negative max", llama2cFile(-1, smallLlama2C()), []string{"max_token_length -1 is negative"}},
		{"too few tokens", llama2cFile(7, smallLlama2C()[:2]), []string{"2 tokens"}},
		{"first record bad", llama2cFile(4, smallLlama2C()), []string{"token 0 ", "length 5 exceeds max_token_length 4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromLlama2CBytes("bad-tok.bin", c.data)
			require.Error(t, err)
			require.ErrorContains(t, err, "bad-tok.bin")
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
		})
	}

	_, err := FromLlama2C(filepath.Join(t.TempDir(), "missing.bin"))
	require.ErrorContains(t, err, "missing.bin")
}

// FuzzFromLlama2CBytes: no input makes the loader panic, and a vocab that loads encodes and
// decodes ASCII text without panicking. The seeds are small (the fuzzer spends its time
// minimising large inputs otherwise): a few byte tokens, merges and odd scores.
func FuzzFromLlama2CBytes(f *testing.F) {
	tiny := llama2cFile(7, []llama2cPiece{
		{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {0, "<0x0A>"}, {0, "<0x20>"}, {0, "<0xE2>"},
		{-1, " t"}, {-2, "he"}, {-3, " the"}, {-4, " "}, {-5, "t"}, {-6, "h"}, {-7, "e"},
		{float32(math.NaN()), "a"}, {float32(math.Inf(1)), "aa"}, {float32(math.Inf(-1)), " a"},
	})
	f.Add(tiny)
	f.Add(tiny[:len(tiny)-3])
	f.Add([]byte{})
	f.Add(llama2cFile(1<<30, []llama2cPiece{{0, "<unk>"}, {0, "<s>"}, {0, "</s>"}, {0, ""}, {0, "<0xzz>"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromLlama2CBytes("fuzz.bin", data)
		if err != nil {
			return
		}
		for _, s := range []string{"Once upon a time", "hello world", " a  b\n", "", "~!@#$%^&*()"} {
			ids, err := tok.Encode(s, true)
			if err != nil {
				continue
			}
			if _, err := tok.Decode(ids); err != nil {
				t.Fatalf("Decode(Encode(%q)) = %v: Encode returned an id outside the vocab", s, err)
			}
			streamText(t, tok, ids)
		}
	})
}
