package collective

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
)

// priceAll prices an all-reduce over n ranks of profile at the sizes from begin to end by
// factor, editing the options first.
func priceAll(t *testing.T, profile string, n int, begin, end int64, factor int, dt dtype.DType, edit func(*ModelOptions)) *Report {
	t.Helper()
	p, err := hw.Lookup(profile)
	require.NoError(t, err)
	op, err := ParseOp("allreduce", n)
	require.NoError(t, err)
	sizes, err := SizeRange(begin, end, factor, dt)
	require.NoError(t, err)
	o := ModelOptions{Op: op, DType: dt, Sizes: sizes, Profile: p, Hosts: 1, Protos: comm.Protos}
	if edit != nil {
		edit(&o)
	}
	rep, err := Price(o)
	require.NoError(t, err)
	return rep
}

func algoNames(results []Result) []string {
	var names []string
	for _, res := range results {
		names = append(names, res.Algo)
	}
	return names
}

// TestPriceIdeal checks the idealised profile's table against DESIGN.md's numbers.
func TestPriceIdeal(t *testing.T) {
	rep := priceAll(t, "h100-sxm-ideal", 8, 16<<10, 64<<20, 16, dtype.F32, func(o *ModelOptions) { o.Protos = []comm.Proto{comm.Simple} })
	require.Equal(t, "model:h100-sxm-ideal", rep.Source)
	require.Len(t, rep.Rows, 4)
	want := []struct {
		fastest string
		oneshot float64
	}{{"oneshot", 3.3}, {"twoshot", 7.1}, {"twoshot", 68.2}, {"twoshot", 1046.9}}
	for i, row := range rep.Rows {
		require.Equal(t, "nvls", row.Auto)
		require.Equal(t, want[i].fastest, row.FastestWithoutNVLS, "size %d", row.SizeBytes)
		for _, res := range row.Results {
			require.Nil(t, res.Wrong)
			if res.Algo == "oneshot" {
				require.InDelta(t, want[i].oneshot, res.TimeUS, 0.05, "size %d", row.SizeBytes)
			}
		}
	}
}

// TestPriceCalibrated: the calibrated h100-sxm table prices every tpslice algorithm and
// NCCL's ring with each protocol; one-shot at 16 KiB costs 6–10 µs as published, and
// NCCL's tuner moves from LL to LL128 to Simple as messages grow.
func TestPriceCalibrated(t *testing.T) {
	rep := priceAll(t, "h100-sxm", 8, 128, 256<<20, 128, dtype.BF16, nil)
	require.Equal(t, "model:h100-sxm", rep.Source)
	require.Contains(t, rep.Model, "calibrated")
	require.Len(t, rep.Rows, 4) // 128 B, 16 KiB, 2 MiB, 256 MiB
	require.Equal(t, []string{"ring/LL", "ring/LL128", "ring/Simple", "oneshot", "twoshot", "nvls", "tree/LL", "tree/LL128", "tree/Simple",
		"nccl LL", "nccl LL128", "nccl Simple"}, algoNames(rep.Rows[0].Results))
	require.Equal(t, []string{"LL", "LL", "LL128", "Simple"}, []string{rep.Rows[0].NCCL, rep.Rows[1].NCCL, rep.Rows[2].NCCL, rep.Rows[3].NCCL})
	require.Equal(t, 16384, int(rep.Rows[1].SizeBytes))
	require.InDelta(t, 8, rep.Rows[1].Results[3].TimeUS, 2, "one-shot at 16 KiB")
	// Under every protocol the ring moves the same bytes: LL pays half the bandwidth for
	// its latency, so it wins the small messages and loses the large ones.
	small, large := rep.Rows[1].Results, rep.Rows[3].Results
	require.Less(t, small[0].TimeUS, small[2].TimeUS, "ring/LL beats ring/Simple at 16 KiB")
	require.Greater(t, large[0].TimeUS, large[2].TimeUS, "ring/Simple beats ring/LL at 256 MiB")
	require.Greater(t, large[0].TimeUS, large[1].TimeUS, "ring/LL128 beats ring/LL at 256 MiB")
}

// TestPriceWire: on the bf16 wire one-shot and two-shot are priced in pairs, the exact
// one as the exact report has it and the wire's at half the bytes (the exact price of
// half the size), next to NCCL's ring with the protocol its tuner picks; Auto is the
// fastest on the wire.
func TestPriceWire(t *testing.T) {
	wire := priceAll(t, "h100-sxm", 8, 1<<10, 64<<20, 8, dtype.F32, func(o *ModelOptions) { o.Wire = comm.WireBF16 })
	exact := priceAll(t, "h100-sxm", 8, 1<<9, 64<<20, 2, dtype.F32, nil)
	require.Equal(t, "bf16", wire.Wire)
	require.Equal(t, exact.Model, wire.Model)
	exactRow := map[int64]Row{}
	for _, row := range exact.Rows {
		exactRow[row.SizeBytes] = row
	}
	timeOf := func(results []Result, name string) float64 {
		for _, res := range results {
			if res.Algo == name {
				return res.TimeUS
			}
		}
		require.Failf(t, "no result", "%s in %v", name, algoNames(results))
		return 0
	}
	for _, row := range wire.Rows {
		same, half := exactRow[row.SizeBytes], exactRow[row.SizeBytes/2]
		require.Equal(t, []string{"oneshot exact", "oneshot bf16", "twoshot exact", "twoshot bf16", "nccl " + strings.ToLower(same.NCCL)}, algoNames(row.Results))
		require.Equal(t, same.NCCL, row.NCCL)
		require.Equal(t, timeOf(same.Results, "nccl "+same.NCCL), row.Results[4].TimeUS, "NCCL's ring on the exact bytes")
		for _, a := range []string{"oneshot", "twoshot"} {
			require.Equal(t, timeOf(same.Results, a), timeOf(row.Results, a+" exact"), "size %d", row.SizeBytes)
			require.Equal(t, timeOf(half.Results, a), timeOf(row.Results, a+" bf16"), "size %d: the wire's bytes", row.SizeBytes)
		}
		fastest := "oneshot"
		if timeOf(row.Results, "twoshot bf16") < timeOf(row.Results, "oneshot bf16") {
			fastest = "twoshot"
		}
		require.Equal(t, fastest, row.Auto, "size %d", row.SizeBytes)
		require.Equal(t, fastest, row.FastestWithoutNVLS, "size %d", row.SizeBytes)
	}
	require.Equal(t, "twoshot", wire.Rows[len(wire.Rows)-1].Auto, "64 MiB")
}

// TestPriceNamed: a named baseline is priced after the offered algorithms without
// entering the model's choices; Auto and an offered name add nothing.
func TestPriceNamed(t *testing.T) {
	offered := priceAll(t, "h100-sxm", 8, 16<<10, 64<<20, 64, dtype.F32, nil)
	named := priceAll(t, "h100-sxm", 8, 16<<10, 64<<20, 64, dtype.F32, func(o *ModelOptions) {
		o.Named = []comm.Algo{comm.Star, comm.Auto, comm.OneShot}
	})
	for i, row := range named.Rows {
		base := offered.Rows[i]
		names := algoNames(base.Results)
		k := len(names) - len(comm.Protos) // before NCCL's
		require.Equal(t, append(append(names[:k:k], "star"), names[k:]...), algoNames(row.Results))
		require.Equal(t, base.Auto, row.Auto)
		require.Equal(t, base.FastestWithoutNVLS, row.FastestWithoutNVLS)
	}
}

// TestPriceRefuses: nothing to price, or a compressed wire the model does not price, is
// refused naming what was wrong.
func TestPriceRefuses(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	allReduce, err := ParseOp("allreduce", 16)
	require.NoError(t, err)
	allGather, err := ParseOp("allgather", 8)
	require.NoError(t, err)
	for _, tc := range []struct {
		o    ModelOptions
		want string
	}{
		{ModelOptions{Op: allReduce, DType: dtype.F32, Profile: p}, "no size to price"},
		{ModelOptions{Op: allReduce, DType: dtype.F32, Sizes: []int64{1024}, Profile: p, Hosts: 2, Wire: comm.WireFP8},
			"--allreduce-dtype fp8 with --model and --hosts 2: the wire is not modelled across hosts"},
		{ModelOptions{Op: allGather, DType: dtype.F32, Sizes: []int64{1024}, Profile: p, Wire: comm.WireBF16},
			"the bf16 wire is the all-reduce's; allgather runs exact"},
	} {
		_, err := Price(tc.o)
		require.ErrorContains(t, err, tc.want)
	}
}
