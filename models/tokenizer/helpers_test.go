package tokenizer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedTestdata returns the path of a file under the shared test data directory
// (../../../shared/testdata from this package), skipping the test when it is absent.
func sharedTestdata(t testing.TB, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{"..", "..", "..", "shared", "testdata"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data %s is absent (it lives in ../shared next to the repository): %v", p, err)
	}
	return p
}

var loaded sync.Map // path → *Tokenizer: the vocab files are loaded once per test binary

// loadShared loads a GGUF tokenizer from the shared test data, once.
func loadShared(t testing.TB, parts ...string) *Tokenizer {
	t.Helper()
	p := sharedTestdata(t, parts...)
	if tok, ok := loaded.Load(p); ok {
		return tok.(*Tokenizer)
	}
	tok, err := FromGGUF(p)
	require.NoError(t, err)
	loaded.Store(p, tok)
	return tok
}

// suiteCase is one case of llama.cpp's tokenizer test suites.
type suiteCase struct {
	in   string
	want []int
}

// loadSuite reads X.gguf.inp and X.gguf.out: inputs separated by the line
// __ggml_vocab_test__ (the newline before a separator belongs to the separator; the file
// ends with one), and one line of expected ids per input.
func loadSuite(t testing.TB, vocabFile string) []suiteCase {
	t.Helper()
	inp, err := os.ReadFile(sharedTestdata(t, "tokenizer", vocabFile+".inp"))
	require.NoError(t, err)
	out, err := os.ReadFile(sharedTestdata(t, "tokenizer", vocabFile+".out"))
	require.NoError(t, err)
	ins := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	require.Equal(t, "", ins[len(ins)-1], "the .inp file ends with a separator")
	ins = ins[:len(ins)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(ins), "one .out line per .inp case")
	cases := make([]suiteCase, len(ins))
	for i, in := range ins {
		cases[i].in = in
		cases[i].want = []int{}
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err, "line %d of %s.out", i+1, vocabFile)
			cases[i].want = append(cases[i].want, id)
		}
	}
	return cases
}
