package perf

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/hw"
)

func tableProfile(t *testing.T, name string) hw.Profile {
	t.Helper()
	p, err := hw.Lookup(name)
	require.NoError(t, err)
	return p
}

func TestIdealTable(t *testing.T) {
	h100 := tableProfile(t, "h100-sxm")
	noNVLS := h100
	noNVLS.NVLS = false
	const maxBytes = 64 << 20

	// want returns the expected algorithm for world n at bucket b.
	tests := []struct {
		name    string
		profile hw.Profile
		n       int
		want    func(n, b int) comm.Algo
	}{
		{"h100 n=8 NVLS everywhere", h100, 8, func(int, int) comm.Algo { return comm.NVLS }},
		{"h100 n=4 NVLS everywhere", h100, 4, func(int, int) comm.Algo { return comm.NVLS }},
		{"h100 n=2 one-shot (ties with NVLS and ring)", h100, 2, func(int, int) comm.Algo { return comm.OneShot }},
		{"h100 without NVLS n=2 one-shot", noNVLS, 2, func(int, int) comm.Algo { return comm.OneShot }},
		{"h100 without NVLS n=8 crossover", noNVLS, 8, oneShotBelowCrossover(noNVLS)},
		{"h100 without NVLS n=4 crossover", noNVLS, 4, oneShotBelowCrossover(noNVLS)},
		{"h100 without NVLS n=6 crossover", noNVLS, 6, oneShotBelowCrossover(noNVLS)},
		{"a100 n=8 no NVLS", tableProfile(t, "a100-sxm"), 8, oneShotBelowCrossover(tableProfile(t, "a100-sxm"))},
		{"b200 n=8 NVLS", tableProfile(t, "b200"), 8, func(int, int) comm.Algo { return comm.NVLS }},
		{"pcie n=4 ring", tableProfile(t, "pcie"), 4, func(int, int) comm.Algo { return comm.Ring }},
		{"pcie n=8 ring", tableProfile(t, "pcie"), 8, func(int, int) comm.Algo { return comm.Ring }},
		{"l40s n=4 ring", tableProfile(t, "l40s-pcie"), 4, func(int, int) comm.Algo { return comm.Ring }},
		{"pcie n=2 one-shot", tableProfile(t, "pcie"), 2, func(int, int) comm.Algo { return comm.OneShot }},
		{"n=1 one-shot (free)", h100, 1, func(int, int) comm.Algo { return comm.OneShot }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := ModelTable(idealised(tc.profile), 0, []int{tc.n}, maxBytes)
			require.NoError(t, tab.Validate())
			require.Equal(t, "model:"+idealised(tc.profile).Name, tab.Source)
			require.Len(t, tab.Rows, comm.Bucket(maxBytes)+1)
			for b := 0; b <= comm.Bucket(maxBytes); b++ {
				want := tc.want(tc.n, b)
				got, ok := tab.Pick(tc.n, comm.BucketBytes(b))
				require.True(t, ok)
				require.Equal(t, want, got.Algo, "n = %d, bucket %d (%d bytes)", tc.n, b, comm.BucketBytes(b))
			}
		})
	}
}

// oneShotBelowCrossover expects one-shot where the bucket's upper bound is below S*, else
// two-shot.
func oneShotBelowCrossover(p hw.Profile) func(n, b int) comm.Algo {
	return func(n, b int) comm.Algo {
		if float64(comm.BucketBytes(b)) < oneShotTwoShotCrossover(n, p.Alpha, p.LinkBytesPerSec) {
			return comm.OneShot
		}
		return comm.TwoShot
	}
}

func TestModelTableCrossoverAtDesignPoint(t *testing.T) {
	p := tableProfile(t, "h100-sxm")
	p.NVLS = false
	tab := ModelTable(idealised(p), 0, []int{8}, 64<<20)
	// S* ≈ 257 KB: 128 KiB still one-shot, 256 KiB (262144 B) already two-shot.
	for _, tc := range []struct {
		bytes int64
		want  comm.Algo
	}{{16 << 10, comm.OneShot}, {128 << 10, comm.OneShot}, {256 << 10, comm.TwoShot}, {1 << 20, comm.TwoShot}, {64 << 20, comm.TwoShot}} {
		got, ok := tab.Pick(8, tc.bytes)
		require.True(t, ok)
		require.Equal(t, tc.want, got.Algo, "%d bytes", tc.bytes)
	}
}

func TestModelTableWorlds(t *testing.T) {
	tab := ModelTable(idealised(tableProfile(t, "h100-sxm")), 0, []int{8, 2, 0, 4, 2, -1}, 1<<20)
	require.Equal(t, []int{2, 4, 8}, tab.Worlds())
	require.Len(t, tab.Rows, 3*21)
	require.NoError(t, tab.Validate())
	tiny := ModelTable(idealised(tableProfile(t, "h100-sxm")), 0, []int{8}, 0)
	require.Len(t, tiny.Rows, 1)
	require.Equal(t, comm.TableRow{World: 8, Bucket: 0, Choice: comm.Choice{Algo: comm.NVLS}}, tiny.Rows[0])
}
