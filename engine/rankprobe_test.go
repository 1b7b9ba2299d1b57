//go:build linux

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/tp"
)

// kernelCounterName is the probe the test workers run: it counts the kernels its rank's
// device runs and answers the question "count" with them and its rank.
const kernelCounterName = "count-kernels"

type kernelCounter struct {
	dev     *device.Device
	rank    int
	kernels atomic.Int64
}

type kernelCount struct{ Rank, Kernels int }

func newKernelCounter(g *tp.Group, rank int) RankProbe {
	return &kernelCounter{dev: g.Device(rank), rank: rank}
}

func (k *kernelCounter) KernelDone(s device.KernelSpan) {
	if s.Stream.Device() == k.dev && !s.Skipped {
		k.kernels.Add(1)
	}
}

func (k *kernelCounter) Answer(question json.RawMessage) (any, error) {
	var q string
	if err := json.Unmarshal(question, &q); err != nil || q != "count" {
		return nil, fmt.Errorf("kernel counter: want the question \"count\", got %s", question)
	}
	return kernelCount{Rank: k.rank, Kernels: int(k.kernels.Load())}, nil
}

// TestProbeRank: a probe the workers' job was given watches the rank the driver names
// from the next step until the driver stops it, and answers in the worker: the kernels of
// a generation on that rank, none where nothing ran; started and stopped back to back on
// alternating ranks while the engine generates between them. A rank out of range, a probe
// no worker has, a second probe on a rank, a second stop, a question the probe refuses
// and an engine without worker processes are errors naming what was wrong; no worker is
// left after Close.
func TestProbeRank(t *testing.T) {
	in, err := New(Config{Model: "stories260K", TP: 2})
	require.NoError(t, err)
	_, err = in.ProbeRank(0, kernelCounterName)
	require.ErrorContains(t, err, "probing a rank needs worker processes")
	require.NoError(t, in.Close())

	e, err := New(Config{Model: "stories260K", TP: 2, Processes: true})
	require.NoError(t, err)
	pids := e.Model().(interface{ Pids() []int }).Pids()
	_, err = e.ProbeRank(2, kernelCounterName)
	require.ErrorContains(t, err, "rank 2 of 2")
	_, err = e.ProbeRank(1, "no-such-probe")
	require.ErrorContains(t, err, fmt.Sprintf(`rank 1 (pid %d): starting probe "no-such-probe": executor: control round: rank 1's worker has no probe "no-such-probe" (it has ["count-kernels"])`, pids[1]))

	generate := func() {
		_, err := e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 4, IgnoreEOS: true}, func(Token) error { return nil })
		require.NoError(t, err)
	}
	for i := range 20 {
		rank := i % 2
		stop, err := e.ProbeRank(rank, kernelCounterName)
		require.NoError(t, err, "round %d", i)
		if i%5 != 4 {
			generate()
		}
		var got kernelCount
		require.NoError(t, stop("count", &got), "round %d", i)
		require.Equal(t, rank, got.Rank, "round %d", i)
		if i%5 == 4 {
			require.Zero(t, got.Kernels, "round %d: nothing ran while the probe watched", i)
		} else {
			require.Positive(t, got.Kernels, "round %d: the generation's kernels on rank %d", i, rank)
		}
		require.ErrorContains(t, stop("count", &got), "already stopped")
	}

	stop, err := e.ProbeRank(0, kernelCounterName)
	require.NoError(t, err)
	_, err = e.ProbeRank(0, kernelCounterName)
	require.ErrorContains(t, err, "a probe already watches rank 0")
	require.ErrorContains(t, stop("how many?", &struct{}{}), `kernel counter: want the question "count", got "how many?"`)
	generate() // the worker still serves steps after its probe failed

	require.NoError(t, e.Close())
	require.Eventually(t, func() bool {
		kids, err := testutil.ChildPids()
		return err == nil && len(kids) == 0
	}, 10*time.Second, 10*time.Millisecond, "no worker process is left")
}
