package decode

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/comm"
)

// TestBenchRow checks the breakdown's arithmetic on made-up kernels: two whole steps of 1 ms
// after the dropped first one, each with 0.5 ms of GEMM and 0.25 ms of all-reduce.
func TestBenchRow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	c := &collector{}
	for step := range 4 { // steps start at 0, 1, 2 and 3 ms; the window's end is the start of the last
		s := step * 1000
		c.spans = append(c.spans,
			kspan{key: "embedding", step: true, start: at(s), end: at(s)},
			kspan{key: "gemm", name: "o_proj", start: at(s + 100), end: at(s + 600)},
			kspan{key: "allreduce+rmsnorm.twoshot", collective: true, start: at(s + 600), end: at(s + 850)},
		)
	}
	// comm's records: in the window, 0.15 of every 0.25 ms all-reduce waited on a peer; the
	// record before the window does not count.
	var records []comm.Record
	for step := range 4 {
		s := step * 1000
		records = append(records, comm.Record{State: comm.Done, Start: at(s + 600), End: at(s + 850), Wait: 150 * time.Microsecond})
	}
	records[0].Start, records[0].Wait = at(-500), 0
	row, ok := c.row(4, batchRun{ttftMs: 2, from: at(0), to: at(3000)}, records)
	require.True(t, ok)
	require.InDelta(t, 1.0, row.P50Ms, 1e-9)
	require.InDelta(t, 1.0, row.P99Ms, 1e-9)
	require.InDelta(t, 4000.0, row.TokensPerS, 1e-6, "4 tokens a step of 1 ms")
	require.InDelta(t, 0.25, row.CommShare, 1e-9)
	require.InDelta(t, 0.25*0.6, row.CommWaitShare, 1e-9)
	require.InDelta(t, 0.5, row.Breakdown["gemm"], 1e-9)
	require.InDelta(t, 0.25, row.Breakdown["allreduce+rmsnorm.twoshot"], 1e-9)
	require.InDelta(t, 0.25, row.Breakdown[HostOverhead], 1e-9)
	require.Zero(t, row.Breakdown["attention"])
	require.Equal(t, map[string]string{"after o_proj": "allreduce+rmsnorm.twoshot"}, row.AllReduce)

	_, ok = c.row(4, batchRun{from: at(1500), to: at(3000)}, nil) // two step starts: no whole step left
	require.False(t, ok)
}
