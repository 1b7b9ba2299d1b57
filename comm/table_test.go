package comm

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBucket(t *testing.T) {
	tests := []struct {
		bytes int64
		want  int
	}{
		{-5, 0}, {0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3},
		{1024, 10}, {1025, 11}, {16 << 10, 14}, {1 << 20, 20}, {1<<20 + 1, 21},
		{1 << 62, 62}, {1<<62 + 1, 63}, {math.MaxInt64, 63},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Bucket(tc.bytes), "Bucket(%d)", tc.bytes)
	}
	for _, tc := range []struct {
		b    int
		want int64
	}{{-1, 1}, {0, 1}, {1, 2}, {10, 1024}, {62, 1 << 62}, {63, math.MaxInt64}, {70, math.MaxInt64}} {
		require.Equal(t, tc.want, BucketBytes(tc.b), "BucketBytes(%d)", tc.b)
	}
	// Bucket b covers (2^(b-1), 2^b]: its upper bound is in it, one byte more is not.
	for b := 1; b < MaxBucket; b++ {
		require.Equal(t, b, Bucket(BucketBytes(b)))
		require.Equal(t, b+1, Bucket(BucketBytes(b)+1))
		require.Equal(t, b, Bucket(BucketBytes(b-1)+1))
	}
}

func TestTablePick(t *testing.T) {
	tab := &Table{Source: "test", Rows: []TableRow{
		{World: 2, Bucket: 10, Choice: Choice{Algo: OneShot}},
		{World: 4, Bucket: 10, Choice: Choice{Algo: OneShot}},
		{World: 4, Bucket: 12, Choice: Choice{Algo: TwoShot}},
		{World: 4, Bucket: 20, Choice: Choice{Algo: Ring}},
		{World: 8, Bucket: 5, Choice: Choice{Algo: NVLS}},
	}}
	require.NoError(t, tab.Validate())
	tests := []struct {
		name  string
		n     int
		bytes int64
		want  Algo
		ok    bool
	}{
		{"exact", 4, 1 << 12, TwoShot, true},
		{"inside bucket", 4, 3000, TwoShot, true},
		{"below smallest bucket", 4, 1, OneShot, true},
		{"gap uses next larger bucket", 4, 1 << 15, Ring, true},
		{"above largest bucket", 4, 1 << 30, Ring, true},
		{"max size", 4, math.MaxInt64, Ring, true},
		{"other world", 2, 1 << 30, OneShot, true},
		{"last world above", 8, 1 << 30, NVLS, true},
		{"missing world", 3, 1024, 0, false},
		{"world above all", 16, 1024, 0, false},
		{"world below all", 1, 1024, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tab.Pick(tc.n, tc.bytes)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got.Algo)
		})
	}
	var nilTable *Table
	_, ok := nilTable.Pick(8, 1)
	require.False(t, ok)
}

func TestTableSet(t *testing.T) {
	tab := &Table{Source: "tuned:test"}
	require.NoError(t, tab.Set(TableRow{World: 8, Bucket: 20, Choice: Choice{Algo: TwoShot}}))
	require.NoError(t, tab.Set(TableRow{World: 2, Bucket: 10, Choice: Choice{Algo: OneShot}}))
	require.NoError(t, tab.Set(TableRow{World: 8, Bucket: 10, Choice: Choice{Algo: OneShot}}))
	require.NoError(t, tab.Set(TableRow{World: 8, Bucket: 20, Choice: Choice{Algo: Ring}})) // replaces
	require.Equal(t, []TableRow{
		{World: 2, Bucket: 10, Choice: Choice{Algo: OneShot}},
		{World: 8, Bucket: 10, Choice: Choice{Algo: OneShot}},
		{World: 8, Bucket: 20, Choice: Choice{Algo: Ring}},
	}, tab.Rows)
	require.NoError(t, tab.Validate())

	tests := []struct {
		name      string
		n, bucket int
		algo      Algo
		want      string
	}{
		{"auto", 8, 10, Auto, "auto"},
		{"unknown algo", 8, 10, Algo(42), "algo(42)"},
		{"world 0", 0, 10, OneShot, "world size 0"},
		{"negative bucket", 8, -1, OneShot, "bucket -1"},
		{"bucket too large", 8, MaxBucket + 1, OneShot, "bucket 64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tab.Set(TableRow{World: tc.n, Bucket: tc.bucket, Choice: Choice{Algo: tc.algo}})
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "tuned:test")
		})
	}
	require.Len(t, tab.Rows, 3, "failed Set must not change the table")
}

func TestTableValidate(t *testing.T) {
	tests := []struct {
		name string
		rows []TableRow
		want string
	}{
		{"empty", nil, "no rows"},
		{"duplicate", []TableRow{{World: 8, Bucket: 1, Choice: Choice{Ring, ProtoAuto}}, {World: 8, Bucket: 1, Choice: Choice{OneShot, ProtoAuto}}}, "duplicate"},
		{"unsorted", []TableRow{{World: 8, Bucket: 2, Choice: Choice{Ring, ProtoAuto}}, {World: 8, Bucket: 1, Choice: Choice{OneShot, ProtoAuto}}}, "out of order"},
		{"unsorted worlds", []TableRow{{World: 8, Bucket: 1, Choice: Choice{Ring, ProtoAuto}}, {World: 4, Bucket: 1, Choice: Choice{OneShot, ProtoAuto}}}, "out of order"},
		{"auto", []TableRow{{World: 8, Bucket: 1, Choice: Choice{Auto, ProtoAuto}}}, "auto"},
		{"world", []TableRow{{World: -2, Bucket: 1, Choice: Choice{Ring, ProtoAuto}}}, "world size -2"},
		{"protocol of an algorithm without one", []TableRow{{World: 8, Bucket: 1, Choice: Choice{OneShot, LL}}}, "protocol LL given for oneshot, which takes none"},
		{"unknown protocol", []TableRow{{World: 8, Bucket: 1, Choice: Choice{Tree, Proto(9)}}}, "unknown protocol proto(9)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Table{Source: "v", Rows: tc.rows}).Validate()
			require.ErrorContains(t, err, tc.want)
		})
	}
	var nilTable *Table
	require.Error(t, nilTable.Validate())
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache", "nested", "allreduce.json")
	tab := filledTable(t, "model:h100-sxm", []int{2, 4, 8}, 8<<20, NVLS)
	require.NoError(t, SaveTable(path, tab))

	got, err := LoadTable[Choice](path)
	require.NoError(t, err)
	require.Equal(t, tab, got)

	// Algorithms are stored by name; no temporary files are left behind.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), `"algo": "nvls"`)
	require.Contains(t, string(data), `"source": "model:h100-sxm"`)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// Saving again replaces the file atomically.
	tab2 := filledTable(t, "model:pcie", []int{4}, 1<<20, Ring)
	require.NoError(t, SaveTable(path, tab2))
	got, err = LoadTable[Choice](path)
	require.NoError(t, err)
	require.Equal(t, tab2, got)
}

// filledTable is a table of source that picks algo for every world of worlds and every
// bucket up to maxBytes'.
func filledTable(t *testing.T, source string, worlds []int, maxBytes int64, algo Algo) *Table {
	tab := &Table{Source: source}
	for _, n := range worlds {
		for b := 0; b <= Bucket(maxBytes); b++ {
			require.NoError(t, tab.Set(TableRow{World: n, Bucket: b, Choice: Choice{Algo: algo}}))
		}
	}
	return tab
}

func TestSaveSortsRowsAndLoadAcceptsAnyOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	tab := &Table{Source: "tuned:abc", Rows: []TableRow{{World: 8, Bucket: 20, Choice: Choice{TwoShot, ProtoAuto}}, {World: 2, Bucket: 3, Choice: Choice{OneShot, ProtoAuto}}, {World: 8, Bucket: 3, Choice: Choice{NVLS, ProtoAuto}}}}
	require.NoError(t, SaveTable(path, tab))
	require.Equal(t, TableRow{World: 8, Bucket: 20, Choice: Choice{TwoShot, ProtoAuto}}, tab.Rows[0], "SaveTable must not reorder the caller's rows")
	got, err := LoadTable[Choice](path)
	require.NoError(t, err)
	require.Equal(t, []TableRow{{World: 2, Bucket: 3, Choice: Choice{OneShot, ProtoAuto}}, {World: 8, Bucket: 3, Choice: Choice{NVLS, ProtoAuto}}, {World: 8, Bucket: 20, Choice: Choice{TwoShot, ProtoAuto}}}, got.Rows)

	// A hand-written file in any order loads sorted.
	unsorted := `{"source":"hand","rows":[{"world":4,"bucket":9,"algo":"ring"},{"world":4,"bucket":2,"algo":"twoshot"}]}`
	require.NoError(t, os.WriteFile(path, []byte(unsorted), 0o644))
	got, err = LoadTable[Choice](path)
	require.NoError(t, err)
	require.Equal(t, []TableRow{{World: 4, Bucket: 2, Choice: Choice{TwoShot, ProtoAuto}}, {World: 4, Bucket: 9, Choice: Choice{Ring, ProtoAuto}}}, got.Rows)
}

func TestSaveTableRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	require.ErrorContains(t, SaveTable[Choice](path, nil), path)
	err := SaveTable(path, &Table{Source: "empty"})
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "no rows")
	_, statErr := os.Stat(path)
	require.True(t, os.IsNotExist(statErr), "an invalid table must not be written")
}

func TestLoadTableErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"bad JSON", `{"source": "x", "rows": [`, "bad JSON"},
		{"not an object", `[1, 2]`, "bad JSON"},
		{"wrong type", `{"rows": [{"world": "eight", "bucket": 1, "algo": "ring"}]}`, "bad JSON"},
		{"unknown algorithm", `{"rows": [{"world": 8, "bucket": 1, "algo": "ring"}, {"world": 8, "bucket": 2, "algo": "butterfly"}]}`, `row 1 (world 8, bucket 2): unknown all-reduce algorithm "butterfly"`},
		{"missing algorithm", `{"rows": [{"world": 8, "bucket": 1}]}`, "missing algo"},
		{"auto row", `{"rows": [{"world": 8, "bucket": 1, "algo": "auto"}]}`, "auto"},
		{"empty rows", `{"source": "x", "rows": []}`, "no rows"},
		{"no rows field", `{"source": "x"}`, "no rows"},
		{"empty file", ``, "bad JSON"},
		{"duplicate", `{"rows": [{"world": 8, "bucket": 1, "algo": "ring"}, {"world": 8, "bucket": 1, "algo": "nvls"}]}`, "duplicate"},
		{"bad world", `{"rows": [{"world": 0, "bucket": 1, "algo": "ring"}]}`, "world size 0"},
		{"bad bucket", `{"rows": [{"world": 8, "bucket": 99, "algo": "ring"}]}`, "bucket 99"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".json")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			_, err := LoadTable[Choice](path)
			require.ErrorContains(t, err, path, "the error must name the file")
			require.ErrorContains(t, err, tc.want)
		})
	}
	missing := filepath.Join(dir, "missing.json")
	_, err := LoadTable[Choice](missing)
	require.ErrorContains(t, err, missing)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestTableJSONUsesAlgoNames(t *testing.T) {
	data, err := json.Marshal(&Table{Source: "s", Rows: []TableRow{{World: 2, Bucket: 4, Choice: Choice{Algo: Lamport}}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"source":"s","rows":[{"world":2,"bucket":4,"algo":"lamport"}]}`, string(data))
}
