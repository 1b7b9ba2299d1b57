package decode

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/engine"
)

// TestWriteTable: the heading names the launch mode, worker processes and a compressed wire, the roofline
// line shows only with a read bandwidth, and a row lacking a breakdown key prints "-"
// in that key's column.
func TestWriteTable(t *testing.T) {
	rep := Report{Model: "tiny", WeightBytes: 2e6, ReadGBps: 10, Rows: []Row{
		{TP: 1, Batch: 1, TTFTMs: 1.5, PromptTokensPerS: 100, P50Ms: 0.5, P99Ms: 0.75, TokensPerS: 2000, E2ETokensPerS: 1500,
			Breakdown: map[string]float64{"gemm": 0.25, HostOverhead: 0.125}},
		{TP: 2, Batch: 8, CommShare: 0.25, CommWaitShare: 0.125,
			Breakdown: map[string]float64{"gemm": 0.125, "allreduce+rmsnorm.oneshot": 0.0625, HostOverhead: 0.25}},
	}}
	o := Options{PromptLen: 4, GenLen: 8}
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, o, rep))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Equal(t, "# tpslice bench: tiny, 2.0 MB of weights; prompt 4, generate 8 tokens per request (greedy); decode graphs", lines[0])
	require.Equal(t, "# read bandwidth 10.0 GB/s (membw): reading the weights once takes 0.20 ms, the floor of a decode step", lines[1])
	head := lines[7]
	require.True(t, strings.HasSuffix(head, "comm  (wait)   gemm  attention  norm  elementwise  embedding  sampling  allreduce+rmsnorm.oneshot  host overhead"), head)
	require.Equal(t, strings.Fields("1 1 1.50 100.0 0.500 0.750 2000.0 1500.0 0.0% 0.0% 0.250 - - - - - - 0.125"), strings.Fields(lines[8]))
	require.Equal(t, strings.Fields("2 8 0.00 0.0 0.000 0.000 0.0 0.0 25.0% 12.5% 0.125 - - - - - 0.062 0.250"), strings.Fields(lines[9]))

	o.Config = engine.Config{Eager: true, AllReduceWire: comm.WireBF16}
	rep.ReadGBps = 0
	b.Reset()
	require.NoError(t, WriteTable(&b, o, rep))
	require.True(t, strings.HasPrefix(b.String(), "# tpslice bench: tiny, 2.0 MB of weights; prompt 4, generate 8 tokens per request (greedy); eager; all-reduces on the bf16 wire\n# TTFT: "), b.String())
	o.Config = engine.Config{Processes: true}
	b.Reset()
	require.NoError(t, WriteTable(&b, o, rep))
	require.True(t, strings.HasPrefix(b.String(), "# tpslice bench: tiny, 2.0 MB of weights; prompt 4, generate 8 tokens per request (greedy); decode graphs; a worker process per rank (--executor mp), rank 0's kernels traced in its worker\n"), b.String())
}
