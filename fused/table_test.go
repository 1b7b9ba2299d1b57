package fused

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
)

func testTable(t *testing.T) *Table {
	t.Helper()
	tb := &Table{Source: "test", Hidden: 64}
	for _, r := range []TableRow{{World: 8, Bucket: 0, Choice: OneShot}, {World: 8, Bucket: 2, Choice: SeqParallel},
		{World: 8, Bucket: 4, Choice: TwoShot}, {World: 2, Bucket: 3, Choice: Tree}} {
		require.NoError(t, tb.Set(r))
	}
	return tb
}

// TestTokenBucketEdges: bucket b covers (2^(b-1), 2^b] tokens.
func TestTokenBucketEdges(t *testing.T) {
	for tokens, want := range map[int]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 9: 4, 1024: 10, 1025: 11} {
		require.Equal(t, want, TokenBucket(tokens), "tokens %d", tokens)
	}
}

// TestTablePick: a call uses its bucket's row, else the nearest larger bucket of its world
// size, else the largest; another world size has no pick.
func TestTablePick(t *testing.T) {
	tb := testTable(t)
	for _, tc := range []struct {
		n, tokens int
		want      Variant
	}{
		{8, 1, OneShot}, {8, 2, SeqParallel}, {8, 3, SeqParallel}, {8, 4, SeqParallel},
		{8, 5, TwoShot}, {8, 16, TwoShot}, {8, 17, TwoShot}, {8, 1 << 20, TwoShot},
		{2, 1, Tree}, {2, 8, Tree}, {2, 9, Tree},
	} {
		v, ok := tb.Pick(tc.n, int64(tc.tokens))
		require.True(t, ok, "n %d tokens %d", tc.n, tc.tokens)
		require.Equal(t, tc.want, v, "n %d tokens %d", tc.n, tc.tokens)
	}
	for _, n := range []int{1, 4, 16} {
		_, ok := tb.Pick(n, 1)
		require.False(t, ok, "world %d has no rows", n)
	}
	_, ok := (*Table)(nil).Pick(8, 1)
	require.False(t, ok)
}

// TestSelectUsesTable: Select takes the table's pick for its hidden size and world, and
// falls back to the fused form of comm's pick otherwise.
func TestSelectUsesTable(t *testing.T) {
	c := newRig(t, 2, comm.Config{Algo: comm.OneShot}).c
	tb := &Table{Source: "test", Hidden: 64}
	require.NoError(t, tb.Set(TableRow{World: 2, Bucket: 0, Choice: SeqParallel}))
	require.Equal(t, SeqParallel, Select(c, tb, 1, 64))
	require.Equal(t, SeqParallel, Select(c, tb, 100, 64), "above the largest bucket")
	require.Equal(t, OneShot, Select(c, tb, 1, 128), "another hidden size")
	require.Equal(t, OneShot, Select(c, nil, 1, 64))
	require.NoError(t, tb.Set(TableRow{World: 8, Bucket: 0, Choice: TwoShot}))
	require.Equal(t, TwoShot, Select(newRig(t, 8, comm.Config{Algo: comm.Ring}).c, tb, 1, 64))
	require.Equal(t, Unfused, Select(newRig(t, 4, comm.Config{Algo: comm.Ring}).c, tb, 1, 64), "no rows for world 4")
}

func TestTableSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "fused.json")
	tb := testTable(t)
	tb.Rows[1].MicrosPerCall = map[string]float64{"seqparallel": 1.5, "oneshot": 2}
	require.NoError(t, comm.SaveTable(path, tb))
	back, err := comm.LoadTable[Variant](path)
	require.NoError(t, err)
	require.Equal(t, tb, back)
}

// TestTableLoadErrors: every damaged file is an error naming the file and what is wrong.
func TestTableLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"truncated", `{"source": "x", "hidden": 64, "rows": [`, "bad JSON"},
		{"variant", `{"source": "x", "hidden": 64, "rows": [{"world": 8, "bucket": 0, "variant": "magic"}]}`, `row 0 (world 8, bucket 0): unknown fused all-reduce variant "magic"`},
		{"auto", `{"source": "x", "hidden": 64, "rows": [{"world": 8, "bucket": 0, "variant": "auto"}]}`, "auto cannot be a table entry"},
		{"duplicate", `{"source": "x", "hidden": 64, "rows": [{"world": 8, "bucket": 0, "variant": "oneshot"}, {"world": 8, "bucket": 0, "variant": "twoshot"}]}`, "duplicate"},
		{"hidden", `{"source": "x", "rows": [{"world": 8, "bucket": 0, "variant": "oneshot"}]}`, "hidden size 0"},
		{"empty", `{"source": "x", "hidden": 64, "rows": []}`, "no rows"},
		{"bucket", `{"source": "x", "hidden": 64, "rows": [{"world": 8, "bucket": 99, "variant": "oneshot"}]}`, "token bucket 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".json")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			_, err := comm.LoadTable[Variant](path)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.ErrorContains(t, comm.SaveTable(filepath.Join(dir, "x.json"), &Table{Source: "x", Hidden: 64}), "no rows")
}
