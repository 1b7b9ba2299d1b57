package fused

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
)

func quickTune(hidden, maxTokens int) TuneOptions {
	return TuneOptions{Hidden: hidden, MaxTokens: maxTokens,
		Measure: comm.MeasureOptions{Target: 50 * time.Microsecond, Rounds: 2, Budget: 5 * time.Millisecond}}
}

// TestAutotunePicksCorrectVariants: every bucket up to MaxTokens has a row; its pick is one
// of the variants measured, all of which reproduce the reference bitwise; at 8 ranks the
// tree (its own summation order) is never among them (at 2 both orders add the same pair).
func TestAutotunePicksCorrectVariants(t *testing.T) {
	for _, n := range []int{2, 8} {
		g := newRig(t, n, comm.Config{})
		tb, err := Autotune(g.c, g.streams, quickTune(64, 12))
		require.NoError(t, err)
		require.NoError(t, tb.Validate())
		require.Equal(t, 64, tb.Hidden)
		require.Len(t, tb.Rows, 5, "buckets of 1, 2, 4, 8 and 16 tokens")
		b, err := newTuneBuffers(g.c, 16*64, 64)
		require.NoError(t, err)
		defer b.free()
		for i, r := range tb.Rows {
			require.Equal(t, n, r.World)
			require.Equal(t, i, r.Bucket)
			require.Contains(t, r.MicrosPerCall, r.Choice.String(), "n %d bucket %d", n, r.Bucket)
			if n == 8 {
				require.NotContains(t, r.MicrosPerCall, Tree.String(), "bucket %d", r.Bucket)
			}
			for name, us := range r.MicrosPerCall {
				require.Positive(t, us, name)
				require.GreaterOrEqual(t, us, r.MicrosPerCall[r.Choice.String()], "%s is faster than the pick", name)
			}
			good, err := b.correct(g.c, g.streams, r.Choice, Shape{Tokens: 1 << r.Bucket, Hidden: 64, Eps: 1e-5})
			require.NoError(t, err)
			require.True(t, good)
		}
	}
}

// TestAutotuneCheckRejects: the correctness check fails a variant that sums in another
// order, so a tuned table can never pick it.
func TestAutotuneCheckRejects(t *testing.T) {
	g := newRig(t, 8, comm.Config{})
	b, err := newTuneBuffers(g.c, 8*64, 64)
	require.NoError(t, err)
	defer b.free()
	sh := Shape{Tokens: 8, Hidden: 64, Eps: 1e-5}
	for _, v := range candidates(g.c) {
		good, err := b.correct(g.c, g.streams, v, sh)
		require.NoError(t, err)
		require.Equal(t, v != Tree, good, "%v", v)
	}
	require.Equal(t, g.c.HasNVLS(), slices.Contains(candidates(g.c), NVLS))
}

// TestTunedTableCache: the first call tunes and caches, the second reads the cache (good);
// a cache of another fingerprint, hidden size or too few buckets is retuned (foreign).
func TestTunedTableCache(t *testing.T) {
	g := newRig(t, 2, comm.Config{})
	path := filepath.Join(t.TempDir(), "fused-tune.json")
	o := quickTune(32, 4)
	first, fresh, err := TunedTable(path, g.c, g.streams, o)
	require.NoError(t, err)
	require.True(t, fresh)
	again, fresh, err := TunedTable(path, g.c, g.streams, o)
	require.NoError(t, err)
	require.False(t, fresh)
	require.Equal(t, first, again)

	_, fresh, err = TunedTable(path, g.c, g.streams, quickTune(32, 8))
	require.NoError(t, err)
	require.True(t, fresh, "a cache short of bucket 3 is retuned")

	stale := *first
	stale.Source = "tuned:another-node"
	require.NoError(t, comm.SaveTable(path, &stale))
	retuned, fresh, err := TunedTable(path, g.c, g.streams, o)
	require.NoError(t, err)
	require.True(t, fresh)
	require.Equal(t, "tuned:"+Fingerprint(g.c, 32), retuned.Source)

	_, fresh, err = TunedTable(path, g.c, g.streams, quickTune(64, 4))
	require.NoError(t, err)
	require.True(t, fresh, "another hidden size is another fingerprint")
}

// TestTunedTableKeepsDamagedCache: a cache that is not a valid fused table is tuned again
// under comm.LoadOrTune's policy, as comm's is: the file is kept as path.damaged, the
// warning names it and why, and the new cache is reused.
func TestTunedTableKeepsDamagedCache(t *testing.T) {
	g := newRig(t, 2, comm.Config{})
	path := filepath.Join(t.TempDir(), "fused-tune.json")
	o := quickTune(32, 4)
	for body, why := range map[string]string{
		`{"source": "tuned:`: "bad JSON",
		`{"source": "x", "hidden": 32, "rows": [{"world": 2, "bucket": 0, "variant": "magic"}]}`: `unknown fused all-reduce variant "magic"`,
		`{"source": "x", "rows": [{"world": 2, "bucket": 0, "variant": "oneshot"}]}`:             "hidden size 0",
	} {
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		got, fresh, err := TunedTable(path, g.c, g.streams, o)
		require.ErrorContains(t, err, why)
		require.ErrorContains(t, err, "kept as "+path+".damaged")
		require.NotNil(t, got, "a damaged cache is a warning, not a failure")
		require.True(t, fresh)
		require.Equal(t, "tuned:"+Fingerprint(g.c, 32), got.Source)
		kept, err := os.ReadFile(path + ".damaged")
		require.NoError(t, err)
		require.Equal(t, body, string(kept), "the user's file is kept as it was")
		again, fresh, err := TunedTable(path, g.c, g.streams, o)
		require.NoError(t, err)
		require.False(t, fresh, "the new cache is reused")
		require.Equal(t, got, again)
	}
}

// TestAutotuneSkipsRefusedVariants: a row too long for half the registered buffer, which
// the sequence-parallel variant needs, leaves it out of the table, and the rest is tuned.
func TestAutotuneSkipsRefusedVariants(t *testing.T) {
	g := newRig(t, 4, comm.Config{BufferBytes: 4 << 10})
	tb, err := Autotune(g.c, g.streams, quickTune(g.c.ChunkCapacity(4), 4))
	require.NoError(t, err)
	require.Len(t, tb.Rows, 3)
	for _, r := range tb.Rows {
		require.NotContains(t, r.MicrosPerCall, SeqParallel.String(), "bucket %d", r.Bucket)
		require.Contains(t, r.MicrosPerCall, OneShot.String(), "bucket %d", r.Bucket)
	}
}
