package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/diag"
)

// TestStartupLog: TPSLICE_DEBUG=INFO's start-up lines name the topology, the selector's
// choice per size, every captured graph and every collective call site, and the
// subsystem filter keeps only what it lists.
func TestStartupLog(t *testing.T) {
	var all, graphOnly bytes.Buffer
	for _, tc := range []struct {
		log *diag.Logger
	}{{diag.New(&all, diag.Info)}, {diag.New(&graphOnly, diag.Info, diag.Graph)}} {
		e, err := New(Config{Model: "tiny", TP: 2, MaxRunning: 4, Debug: tc.log})
		require.NoError(t, err)
		require.NoError(t, e.Close())
	}
	out := all.String()
	require.Contains(t, out, "INFO INIT TP group of 2 ranks on nvswitch")
	require.Contains(t, out, "INFO INIT CPU placement (affinity auto): ")
	require.Contains(t, out, "INFO INIT rank 1: NUMA node ")
	require.Contains(t, out, "INFO TUNING all-reduce of 256 B at TP 2: ")
	require.Contains(t, out, "INFO TUNING fused all-reduce + rmsnorm of 1 tokens × 64 at TP 2: oneshot (the fused form of the all-reduce pick)")
	for _, b := range []string{"1", "2", "4"} {
		require.Contains(t, out, "INFO GRAPH decode graph for batch "+b+" (greedy)")
	}
	require.Contains(t, out, "INFO COLL decode batch 1, embedding: allreduce+rmsnorm ")
	require.Contains(t, out, "INFO COLL decode batch 1, layer 0 mlp.down_proj: ")
	require.Contains(t, out, "INFO COLL decode batch 1, sampling: allgather ")

	lines := strings.Split(strings.TrimSpace(graphOnly.String()), "\n")
	require.Len(t, lines, 6, "3 buckets × 2 graphs")
	for _, l := range lines {
		require.Contains(t, l, " INFO GRAPH ")
	}
}
