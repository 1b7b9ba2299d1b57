package collective

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
)

// TestWriteTablePriced: the model's table names its basis and has the model's own columns
// (w/o nvls, nccl) and no #wrong; a row per size, a column group per algorithm.
func TestWriteTablePriced(t *testing.T) {
	rep := priceAll(t, "h100-sxm", 8, 1<<10, 1<<20, 32, dtype.F32, nil)
	var b bytes.Buffer
	require.NoError(t, rep.WriteTable(&b))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Equal(t, "# tpslice allreduce-bench: 8 ranks, f32, model:h100-sxm (nvswitch fabric)", lines[0])
	require.Contains(t, lines[1], "; nccl X: NCCL's ring with protocol X")
	require.Equal(t, "# time in µs; algbw = size/time and busbw = algbw·2(n-1)/n in GB/s", lines[2])
	head := strings.Fields(lines[3])
	require.Equal(t, []string{"size", "count", "type", "auto", "w/o", "nvls", "nccl", "|", rep.Rows[0].Results[0].Algo}, head[:9])
	require.NotContains(t, b.String(), "#wrong")
	require.Len(t, lines, 4+len(rep.Rows))
	require.Equal(t, 3*len(rep.Rows[0].Results), strings.Count(lines[3], "algbw")+strings.Count(lines[3], "busbw")+strings.Count(lines[3], "|"))
}

// TestWriteTableMeasured: a measured table counts wrong elements, "-" without --check; on a
// compressed wire it says what the wire moves and prints the error against the exact wire.
func TestWriteTableMeasured(t *testing.T) {
	zero := 0
	rep := &Report{Op: "allreduce", Ranks: 2, DType: "f32", Source: "measured", Fabric: "nvswitch", Selector: "default: vLLM's rule",
		Rows: []Row{{SizeBytes: 1024, Count: 256, Auto: "oneshot", Results: []Result{
			{Algo: "oneshot", TimeUS: 5, AlgBWGBps: 0.2, BusBWGBps: 0.2, Wrong: &zero}, {Algo: "twoshot", TimeUS: 7}}}}}
	var b bytes.Buffer
	require.NoError(t, rep.WriteTable(&b))
	out := b.String()
	require.Contains(t, out, "# auto: default: vLLM's rule\n")
	require.Contains(t, out, "# #wrong: elements off the float64 reference or differing between ranks")
	require.Contains(t, out, "| oneshot algbw busbw #wrong | twoshot algbw busbw #wrong\n")
	require.Contains(t, out, "|     5.0  0.20  0.20      0 |     7.0  0.00  0.00      -\n")

	rep.Wire = comm.WireFP8.String()
	rep.Rows[0].Results[0].Error = &comm.WireError{MaxRel: 0.0123}
	b.Reset()
	require.NoError(t, rep.WriteTable(&b))
	out = b.String()
	require.Contains(t, out, "# wire: fp8 (e4m3 codes and one f32 scale per 32 values, summed in f32)")
	require.Contains(t, out, "| oneshot algbw busbw maxrel |")
	require.Contains(t, out, " 0.012 |")
	require.NotContains(t, out, "#wrong")
}

// TestWireAlgos: of all the algorithms a compressed wire keeps those that run it; naming
// one that does not is an error naming both.
func TestWireAlgos(t *testing.T) {
	got, err := WireAlgos([]comm.Algo{comm.Ring, comm.OneShot, comm.TwoShot, comm.Auto}, comm.WireBF16, true)
	require.NoError(t, err)
	require.Equal(t, []comm.Algo{comm.OneShot, comm.TwoShot, comm.Auto}, got)
	_, err = WireAlgos([]comm.Algo{comm.OneShot, comm.Ring}, comm.WireBF16, false)
	require.ErrorContains(t, err, "--algo ring does not run --allreduce-dtype bf16")
}
