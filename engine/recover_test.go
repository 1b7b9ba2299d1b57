package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/models/stories260k"
)

const recoverTimeout = time.Second

// TestRecoverFromFaults: every injected fault, at TP 2 and 8, fails the step it hits
// within the collective deadline with an error naming the rank; the sequences of that
// step end with it, the engine rebuilds its TP group, the requests still queued run on
// the new one, and a request afterwards gives the tokens it gave before the fault.
func TestRecoverFromFaults(t *testing.T) {
	req := Request{Prompt: "Once upon a time", MaxTokens: 12}
	for _, tp := range []int{2, 8} {
		for _, kind := range []comm.FaultKind{comm.FaultStall, comm.FaultPanic, comm.FaultSkip, comm.FaultCorrupt} {
			t.Run(fmt.Sprintf("tp%d/%v", tp, kind), func(t *testing.T) {
				ref, err := New(Config{Model: "tiny", TP: tp, MaxRunning: 2})
				require.NoError(t, err)
				want, err := ref.Generate(context.Background(), req, func(Token) error { return nil })
				require.NoError(t, err)
				require.NoError(t, ref.Close())

				fault := comm.NewFaultInjector(comm.Fault{Rank: tp - 1, Call: 40, Kind: kind})
				e, err := New(Config{Model: "tiny", TP: tp, MaxRunning: 2, CollectiveTimeout: recoverTimeout, Fault: fault})
				require.NoError(t, err)
				defer e.Close()

				// Six requests, two running at a time: the fault hits the first steps, so
				// some are in flight and the rest wait for the rebuilt group.
				type outcome struct {
					res Result
					err error
				}
				out := make([]outcome, 6)
				var wg sync.WaitGroup
				for i := range out {
					wg.Go(func() {
						out[i].res, out[i].err = e.Generate(context.Background(), req, func(Token) error { return nil })
					})
				}
				wg.Wait()
				require.True(t, fault.Fired())
				// A request submitted while the group is rebuilt is refused at once, so the
				// rebuild may still run.
				require.Eventually(t, func() bool { return e.Health() == nil && len(e.Recoveries()) == 1 }, 20*time.Second, time.Millisecond)
				rec := e.Recoveries()[0]
				t.Logf("detected in %v, rebuilt in %v, %d in flight: %v", rec.Detection, rec.Rebuild, rec.InFlight, rec.Err)
				require.NoError(t, rec.RebuildErr)
				require.Less(t, rec.Detection, recoverTimeout+2*time.Second, "detected within the deadline")
				require.ErrorContains(t, rec.Err, fmt.Sprintf("rank %d", tp-1))
				require.NoError(t, e.Health())
				for r, calls := range rec.Flight.Ranks { // what finished before the failure stays on record as done
					require.NotEmpty(t, calls, "rank %d", r)
					for _, c := range calls[:len(calls)-1] {
						require.Equal(t, comm.Done, c.State, "rank %d: %v", r, c)
					}
				}

				failed := 0
				for _, o := range out {
					if errors.Is(o.err, ErrUnavailable) {
						continue // submitted during the rebuild
					}
					if o.err != nil {
						failed++
						require.ErrorIs(t, o.err, ErrStepFailed)
						require.ErrorContains(t, o.err, "rank")
						continue
					}
					require.Equal(t, FinishLength, o.res.FinishReason)
					require.Equal(t, want.OutputIDs, o.res.OutputIDs, "every request that ran gives the tokens of an engine without the fault")
				}
				require.Equal(t, rec.InFlight, failed, "only the sequences in flight fail")

				after, err := e.Generate(context.Background(), req, func(Token) error { return nil })
				require.NoError(t, err)
				require.Equal(t, want.OutputIDs, after.OutputIDs)
				require.Zero(t, e.Blocks().InUse())
			})
		}
	}
}

// TestRebuildFailureEndsTheEngine: when the checkpoint is gone by the time a rebuild needs
// it, the engine says so for good: Failed is closed, Health names the cause, queued and
// new requests fail with ErrUnavailable.
func TestRebuildFailureEndsTheEngine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stories260K.bin")
	require.NoError(t, os.WriteFile(path, stories260k.Checkpoint, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok512.bin"), stories260k.Tokenizer, 0o644))

	fault := comm.NewFaultInjector(comm.Fault{Rank: 1, Call: 40, Kind: comm.FaultPanic})
	e, err := New(Config{Model: path, TP: 2, MaxRunning: 1, CollectiveTimeout: recoverTimeout, Fault: fault})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, os.Remove(path))

	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = e.Generate(context.Background(), Request{Prompt: "Once upon a time", MaxTokens: 12}, func(Token) error { return nil })
		})
	}
	wg.Wait()
	select {
	case <-e.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("Failed is not closed after the rebuild failed")
	}
	require.ErrorIs(t, e.Health(), ErrUnavailable)
	require.ErrorContains(t, e.Health(), "could not be rebuilt")
	require.ErrorContains(t, e.Health(), "stories260K.bin")
	for _, err := range errs {
		require.Error(t, err)
	}
	_, err = e.Generate(context.Background(), Request{Prompt: "again"}, func(Token) error { return nil })
	require.ErrorIs(t, err, ErrUnavailable)
}

// TestRebuildKeepsTheTokenizer: a rebuild reads the checkpoint's weights again but not its
// tokenizer (removed here once the engine runs: the rebuild still succeeds, and requests
// are still tokenized), and at INFO it logs the new group's topology, selector, graphs and
// collective sites once more, as at start-up, every line marked "rebuild 1: ".
func TestRebuildKeepsTheTokenizer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stories260K.bin")
	tokPath := filepath.Join(dir, "tok512.bin")
	require.NoError(t, os.WriteFile(path, stories260k.Checkpoint, 0o644))
	require.NoError(t, os.WriteFile(tokPath, stories260k.Tokenizer, 0o644))
	req := Request{Prompt: "Once upon a time", MaxTokens: 12}

	var log bytes.Buffer // read once the engine is closed
	fault := comm.NewFaultInjector(comm.Fault{Rank: 1, Call: 40, Kind: comm.FaultPanic})
	e, err := New(Config{Model: path, TP: 2, MaxRunning: 1, CollectiveTimeout: recoverTimeout, Fault: fault, Debug: diag.New(&log, diag.Info)})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, os.Remove(tokPath))

	_, err = e.Generate(context.Background(), req, func(Token) error { return nil })
	require.ErrorIs(t, err, ErrStepFailed)
	require.Eventually(t, func() bool { return e.Health() == nil && len(e.Recoveries()) == 1 }, 20*time.Second, time.Millisecond)
	require.NoError(t, e.Recoveries()[0].RebuildErr)
	after, err := e.Generate(context.Background(), req, func(Token) error { return nil })
	require.NoError(t, err)
	require.Equal(t, FinishLength, after.FinishReason)
	require.NoError(t, e.Close())

	var startup, rebuilt []string
	for _, l := range strings.Split(log.String(), "\n") {
		_, msg, ok := strings.Cut(l, " INFO ")
		if !ok {
			continue
		}
		if subsys, rest, _ := strings.Cut(msg, " "); strings.HasPrefix(rest, "rebuild 1: ") {
			rebuilt = append(rebuilt, subsys+" "+strings.TrimPrefix(rest, "rebuild 1: "))
		} else {
			startup = append(startup, msg)
		}
	}
	require.NotEmpty(t, startup)
	require.Len(t, rebuilt, len(startup), "the rebuilt group is logged line for line as at start-up")
	for i := range startup {
		if strings.HasPrefix(startup[i], "GRAPH ") { // capture times differ
			startup[i], _, _ = strings.Cut(startup[i], " captured in ")
			rebuilt[i], _, _ = strings.Cut(rebuilt[i], " captured in ")
		}
	}
	require.Equal(t, startup, rebuilt)
	require.Contains(t, log.String(), " INFO INIT rebuild 1: TP group of 2 ranks on ")
}
