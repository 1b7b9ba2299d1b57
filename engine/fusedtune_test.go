package engine

import (
	"bytes"
	"context"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/fused"
)

// seqParallelCounter counts rank 0's sequence-parallel fused calls.
type seqParallelCounter struct {
	dev   *device.Device
	calls atomic.Int64
}

func (c *seqParallelCounter) KernelDone(s device.KernelSpan) {
	if s.Stream.Device() == c.dev && s.Kernel.Work.Op == device.OpReduceScatterRMSNormAllGather {
		c.calls.Add(1)
	}
}

// generateMix runs a batch of greedy and sampled requests of different prompt lengths, so
// that prefill and decode steps of several token buckets run.
func generateMix(t *testing.T, e *Engine) [][]int32 {
	t.Helper()
	var reqs []Request
	for i := range 5 {
		prompt := []int32{3, int32(10 + i)}
		for k := range 3 * i {
			prompt = append(prompt, int32(20+k))
		}
		r := Request{PromptIDs: prompt, MaxTokens: 8}
		if i%2 == 1 {
			r.Sampling = Sampling{Temperature: 0.9, TopK: 5, Seed: uint64(i)}
		}
		reqs = append(reqs, r)
	}
	results, err := e.GenerateBatch(context.Background(), reqs, func(int, Token) error { return nil })
	require.NoError(t, err)
	var out [][]int32
	for _, r := range results {
		out = append(out, r.OutputIDs)
	}
	return out
}

// TestFusedTableSeqParallelSameTokens: an engine whose fused table picks the
// sequence-parallel variant at every token bucket runs it (eagerly and in the captured
// decode graphs) and generates bitwise the tokens of the default selection, at TP 2 and 8.
func TestFusedTableSeqParallelSameTokens(t *testing.T) {
	for _, world := range []int{2, 8} {
		cfg := Config{Model: "tiny", TP: world, MaxRunning: 8, MaxBatchTokens: 64}
		e, err := New(cfg)
		require.NoError(t, err)
		want := generateMix(t, e)
		require.NoError(t, e.Close())

		table := &fused.Table{Source: "test", Hidden: 64}
		for b := range fused.TokenBucket(cfg.MaxBatchTokens) + 1 {
			require.NoError(t, table.Set(fused.TableRow{World: world, Bucket: b, Choice: fused.SeqParallel}))
		}
		cfg.FusedTable = table
		e, err = New(cfg)
		require.NoError(t, err)
		for _, bucket := range e.Graphs().Buckets {
			nodes := e.decodeGraphs[bucket][1].Graph(0).Nodes
			require.True(t, slices.ContainsFunc(nodes, func(n device.GraphNode) bool {
				return n.Kernel.Work.Op == device.OpReduceScatterRMSNormAllGather
			}), "TP %d: the decode graph of batch %d runs the table's variant", world, bucket)
		}
		counter := &seqParallelCounter{dev: e.Model().Group().Device(0)}
		e.Model().Group().Node().SetTracer(counter)
		got := generateMix(t, e)
		e.Model().Group().Node().SetTracer(nil)
		require.NoError(t, e.Close())
		require.Equal(t, want, got, "TP %d", world)
		require.Positive(t, counter.calls.Load(), "TP %d: the table's variant ran", world)
	}
}

// TestFusedTuneCache: an engine given a tune cache autotunes the fused variants for the
// model's hidden size at start-up, logs the pick per token bucket, caches the table, and
// generates the default selection's tokens; a second engine reads the cache; a damaged
// cache is kept aside with a warning and tuned again.
func TestFusedTuneCache(t *testing.T) {
	cfg := Config{Model: "tiny", TP: 2, MaxRunning: 4, MaxBatchTokens: 16}
	e, err := New(cfg)
	require.NoError(t, err)
	want := generateMix(t, e)
	require.NoError(t, e.Close())

	cfg.FusedTuneDir = t.TempDir()
	path := FusedTunePath(cfg.FusedTuneDir, 2, device.NVSwitch, 64)
	for run := range 2 {
		var log bytes.Buffer
		cfg.Debug = diag.New(&log, diag.Info, diag.Tuning)
		e, err := New(cfg)
		require.NoError(t, err)
		require.Equal(t, want, generateMix(t, e), "run %d", run)
		require.NoError(t, e.Close())
		require.Equal(t, run == 0, bytes.Contains(log.Bytes(), []byte("fused variants autotuned for hidden 64, 1 to 16 tokens")), "run %d", run)
		for _, tokens := range []string{"1", "2", "4", "8", "16"} {
			require.Contains(t, log.String(), "INFO TUNING fused all-reduce + rmsnorm of "+tokens+" tokens × 64 at TP 2: ")
		}
		require.Contains(t, log.String(), "(table tuned:")
	}
	table, err := comm.LoadTable[fused.Variant](path)
	require.NoError(t, err)
	require.Len(t, table.Rows, 5)

	// A damaged cache is tuned again (comm.LoadOrTune): the engine starts, warns naming the
	// file, and keeps it beside the new cache.
	require.NoError(t, os.WriteFile(path, []byte("{"), 0o644))
	var log bytes.Buffer
	cfg.Debug = diag.New(&log, diag.Info, diag.Tuning)
	e, err = New(cfg)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.Contains(t, log.String(), "WARN TUNING")
	require.Contains(t, log.String(), "kept as "+path+".damaged")
	kept, err := os.ReadFile(path + ".damaged")
	require.NoError(t, err)
	require.Equal(t, "{", string(kept))
}
