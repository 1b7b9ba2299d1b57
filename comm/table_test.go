package comm

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/hw"
)

func tableProfile(t *testing.T, name string) hw.Profile {
	t.Helper()
	p, err := hw.Lookup(name)
	require.NoError(t, err)
	return p
}

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

func TestModelTable(t *testing.T) {
	h100 := tableProfile(t, "h100-sxm")
	noNVLS := h100
	noNVLS.NVLS = false
	const maxBytes = 64 << 20

	// want returns the expected algorithm for world n at bucket b.
	tests := []struct {
		name    string
		profile hw.Profile
		n       int
		want    func(n, b int) Algo
	}{
		{"h100 n=8 NVLS everywhere", h100, 8, func(int, int) Algo { return NVLS }},
		{"h100 n=4 NVLS everywhere", h100, 4, func(int, int) Algo { return NVLS }},
		{"h100 n=2 one-shot (ties with NVLS and ring)", h100, 2, func(int, int) Algo { return OneShot }},
		{"h100 without NVLS n=2 one-shot", noNVLS, 2, func(int, int) Algo { return OneShot }},
		{"h100 without NVLS n=8 crossover", noNVLS, 8, oneShotBelowCrossover(noNVLS)},
		{"h100 without NVLS n=4 crossover", noNVLS, 4, oneShotBelowCrossover(noNVLS)},
		{"h100 without NVLS n=6 crossover", noNVLS, 6, oneShotBelowCrossover(noNVLS)},
		{"a100 n=8 no NVLS", tableProfile(t, "a100-sxm"), 8, oneShotBelowCrossover(tableProfile(t, "a100-sxm"))},
		{"b200 n=8 NVLS", tableProfile(t, "b200"), 8, func(int, int) Algo { return NVLS }},
		{"pcie n=4 ring", tableProfile(t, "pcie"), 4, func(int, int) Algo { return Ring }},
		{"pcie n=8 ring", tableProfile(t, "pcie"), 8, func(int, int) Algo { return Ring }},
		{"l40s n=4 ring", tableProfile(t, "l40s-pcie"), 4, func(int, int) Algo { return Ring }},
		{"pcie n=2 one-shot", tableProfile(t, "pcie"), 2, func(int, int) Algo { return OneShot }},
		{"n=1 one-shot (free)", h100, 1, func(int, int) Algo { return OneShot }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := ModelTable(tc.profile, []int{tc.n}, maxBytes)
			require.NoError(t, tab.Validate())
			require.Equal(t, "model:"+tc.profile.Name, tab.Source)
			require.Len(t, tab.Rows, Bucket(maxBytes)+1)
			for b := 0; b <= Bucket(maxBytes); b++ {
				want := tc.want(tc.n, b)
				got, ok := tab.Pick(tc.n, BucketBytes(b))
				require.True(t, ok)
				require.Equal(t, want, got, "n = %d, bucket %d (%d bytes)", tc.n, b, BucketBytes(b))
			}
		})
	}
}

// oneShotBelowCrossover expects one-shot where the bucket's upper bound is below S*, else
// two-shot.
func oneShotBelowCrossover(p hw.Profile) func(n, b int) Algo {
	return func(n, b int) Algo {
		if float64(BucketBytes(b)) < OneShotTwoShotCrossover(n, p.Alpha, p.LinkBytesPerSec) {
			return OneShot
		}
		return TwoShot
	}
}

func TestModelTableCrossoverAtDesignPoint(t *testing.T) {
	p := tableProfile(t, "h100-sxm")
	p.NVLS = false
	tab := ModelTable(p, []int{8}, 64<<20)
	// S* ≈ 257 KB: 128 KiB still one-shot, 256 KiB (262144 B) already two-shot.
	for _, tc := range []struct {
		bytes int64
		want  Algo
	}{{16 << 10, OneShot}, {128 << 10, OneShot}, {256 << 10, TwoShot}, {1 << 20, TwoShot}, {64 << 20, TwoShot}} {
		got, ok := tab.Pick(8, tc.bytes)
		require.True(t, ok)
		require.Equal(t, tc.want, got, "%d bytes", tc.bytes)
	}
}

func TestModelTableWorlds(t *testing.T) {
	tab := ModelTable(tableProfile(t, "h100-sxm"), []int{8, 2, 0, 4, 2, -1}, 1<<20)
	require.Equal(t, []int{2, 4, 8}, tab.Worlds())
	require.Len(t, tab.Rows, 3*21)
	require.NoError(t, tab.Validate())
	tiny := ModelTable(tableProfile(t, "h100-sxm"), []int{8}, 0)
	require.Len(t, tiny.Rows, 1)
	require.Equal(t, TableRow{World: 8, Bucket: 0, Algo: NVLS}, tiny.Rows[0])
}

func TestTablePick(t *testing.T) {
	tab := &Table{Source: "test", Rows: []TableRow{
		{World: 2, Bucket: 10, Algo: OneShot},
		{World: 4, Bucket: 10, Algo: OneShot},
		{World: 4, Bucket: 12, Algo: TwoShot},
		{World: 4, Bucket: 20, Algo: Ring},
		{World: 8, Bucket: 5, Algo: NVLS},
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
			require.Equal(t, tc.want, got)
		})
	}
	var nilTable *Table
	_, ok := nilTable.Pick(8, 1)
	require.False(t, ok)
}

func TestTableSet(t *testing.T) {
	tab := &Table{Source: "tuned:test"}
	require.NoError(t, tab.Set(8, 20, TwoShot))
	require.NoError(t, tab.Set(2, 10, OneShot))
	require.NoError(t, tab.Set(8, 10, OneShot))
	require.NoError(t, tab.Set(8, 20, Ring)) // replaces
	require.Equal(t, []TableRow{
		{World: 2, Bucket: 10, Algo: OneShot},
		{World: 8, Bucket: 10, Algo: OneShot},
		{World: 8, Bucket: 20, Algo: Ring},
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
			err := tab.Set(tc.n, tc.bucket, tc.algo)
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
		{"duplicate", []TableRow{{8, 1, Ring}, {8, 1, OneShot}}, "duplicate"},
		{"unsorted", []TableRow{{8, 2, Ring}, {8, 1, OneShot}}, "out of order"},
		{"unsorted worlds", []TableRow{{8, 1, Ring}, {4, 1, OneShot}}, "out of order"},
		{"auto", []TableRow{{8, 1, Auto}}, "auto"},
		{"world", []TableRow{{-2, 1, Ring}}, "world size -2"},
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
	tab := ModelTable(tableProfile(t, "h100-sxm"), []int{2, 4, 8}, 8<<20)
	require.NoError(t, SaveTable(path, tab))

	got, err := LoadTable(path)
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
	p := tableProfile(t, "pcie")
	tab2 := ModelTable(p, []int{4}, 1<<20)
	require.NoError(t, SaveTable(path, tab2))
	got, err = LoadTable(path)
	require.NoError(t, err)
	require.Equal(t, tab2, got)
}

func TestSaveSortsRowsAndLoadAcceptsAnyOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	tab := &Table{Source: "tuned:abc", Rows: []TableRow{{8, 20, TwoShot}, {2, 3, OneShot}, {8, 3, NVLS}}}
	require.NoError(t, SaveTable(path, tab))
	require.Equal(t, TableRow{8, 20, TwoShot}, tab.Rows[0], "SaveTable must not reorder the caller's rows")
	got, err := LoadTable(path)
	require.NoError(t, err)
	require.Equal(t, []TableRow{{2, 3, OneShot}, {8, 3, NVLS}, {8, 20, TwoShot}}, got.Rows)

	// A hand-written file in any order loads sorted.
	unsorted := `{"source":"hand","rows":[{"world":4,"bucket":9,"algo":"ring"},{"world":4,"bucket":2,"algo":"twoshot"}]}`
	require.NoError(t, os.WriteFile(path, []byte(unsorted), 0o644))
	got, err = LoadTable(path)
	require.NoError(t, err)
	require.Equal(t, []TableRow{{4, 2, TwoShot}, {4, 9, Ring}}, got.Rows)
}

func TestSaveTableRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	require.ErrorContains(t, SaveTable(path, nil), path)
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
			_, err := LoadTable(path)
			require.ErrorContains(t, err, path, "the error must name the file")
			require.ErrorContains(t, err, tc.want)
		})
	}
	missing := filepath.Join(dir, "missing.json")
	_, err := LoadTable(missing)
	require.ErrorContains(t, err, missing)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestTableJSONUsesAlgoNames(t *testing.T) {
	data, err := json.Marshal(&Table{Source: "s", Rows: []TableRow{{World: 2, Bucket: 4, Algo: Lamport}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"source":"s","rows":[{"world":2,"bucket":4,"algo":"lamport"}]}`, string(data))
}

func TestModelRows(t *testing.T) {
	h100 := tableProfile(t, "h100-sxm")
	sizes := make([]int64, len(designTable))
	for i, r := range designTable {
		sizes[i] = r.bytes
	}

	t.Run("h100 reproduces the design table", func(t *testing.T) {
		rows := ModelRows(h100, 8, sizes)
		require.Len(t, rows, len(sizes))
		for i, r := range rows {
			d := designTable[i]
			require.Equal(t, d.bytes, r.Bytes)
			require.Equal(t, []Algo{Ring, OneShot, TwoShot, NVLS, Tree}, modelRowAlgos(r))
			for a, want := range map[Algo]float64{Ring: d.ring, OneShot: d.oneShot, TwoShot: d.twoShot, NVLS: d.nvls, Tree: d.tree} {
				got, ok := r.Time(a)
				require.True(t, ok)
				require.InDelta(t, want, math.Round(modelMicros(got)*10)/10, 1e-9, "%v at %d", a, d.bytes)
			}
			require.Equal(t, NVLS, r.Fastest)
			require.Equal(t, NVLS, r.Auto)
			_, ok := r.Time(Lamport)
			require.False(t, ok, "Lamport is omitted")
		}
	})

	t.Run("without NVLS the fastest column matches", func(t *testing.T) {
		p := h100
		p.NVLS = false
		rows := ModelRows(p, 8, sizes)
		for i, r := range rows {
			require.Equal(t, []Algo{Ring, OneShot, TwoShot, Tree}, modelRowAlgos(r))
			require.Equal(t, designTable[i].fastestWithoutNVLS, r.Fastest, "%d bytes", r.Bytes)
		}
	})

	t.Run("auto follows the bucket near the crossover", func(t *testing.T) {
		p := h100
		p.NVLS = false
		// 200 KB is below S* ≈ 257 KB, but its bucket's upper bound (256 KiB) is above.
		rows := ModelRows(p, 8, []int64{200e3})
		require.Equal(t, OneShot, rows[0].Fastest)
		require.Equal(t, TwoShot, rows[0].Auto)
		want, ok := ModelTable(p, []int{8}, 1<<20).Pick(8, 200e3)
		require.True(t, ok)
		require.Equal(t, want, rows[0].Auto)
	})

	t.Run("pcie n=4 offers ring only", func(t *testing.T) {
		rows := ModelRows(tableProfile(t, "pcie"), 4, []int64{16 << 10, 64 << 20})
		for _, r := range rows {
			require.Equal(t, []Algo{Ring}, modelRowAlgos(r))
			require.Equal(t, Ring, r.Fastest)
			require.Equal(t, Ring, r.Auto)
		}
	})

	t.Run("pcie n=2 offers peer algorithms", func(t *testing.T) {
		rows := ModelRows(tableProfile(t, "pcie"), 2, []int64{16 << 10})
		require.Equal(t, []Algo{Ring, OneShot, TwoShot, Tree}, modelRowAlgos(rows[0]))
		require.Equal(t, OneShot, rows[0].Fastest)
	})

	t.Run("empty and negative sizes", func(t *testing.T) {
		require.Empty(t, ModelRows(h100, 8, nil))
		rows := ModelRows(h100, 8, []int64{-3})
		require.Equal(t, int64(0), rows[0].Bytes)
	})
}

func modelRowAlgos(r ModelRow) []Algo {
	var as []Algo
	for _, at := range r.Times {
		as = append(as, at.Algo)
	}
	return as
}
