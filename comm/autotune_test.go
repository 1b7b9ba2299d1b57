package comm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestTunedTableRetunesForeignCache: a cache whose rows cover the range but that was tuned
// under another fingerprint (another node, another dtype, the cost model's, none) is
// measured again and overwritten with this communicator's table, which the next call
// reuses. fused's TestTunedTableCache is the fused table's twin.
func TestTunedTableRetunesForeignCache(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{BufferBytes: 64 << 10})
	path := filepath.Join(t.TempDir(), "tune.json")
	o := TuneOptions{MinBytes: 64, MaxBytes: 64, Measure: MeasureOptions{Target: time.Millisecond, Rounds: 2}}
	own, fresh, err := g.c.TunedTable(path, g.streams, o)
	require.NoError(t, err)
	require.True(t, fresh)
	require.Equal(t, "tuned:"+g.c.Fingerprint(dtype.F32), own.Source)
	for _, tc := range []struct {
		name, source string
	}{
		{"another node", "tuned:cuda-h100/n2-sm132-nvswitch/buf65536-lamport262144-blocks2/f32/6-algos-3-protos"},
		{"another dtype", "tuned:" + g.c.Fingerprint(dtype.BF16)},
		{"the cost model", "model:h100"},
		{"no source", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			foreign := *own
			foreign.Source = tc.source
			require.NoError(t, SaveTable(path, &foreign))
			got, fresh, err := g.c.TunedTable(path, g.streams, o)
			require.NoError(t, err)
			require.True(t, fresh, "a cache from %q must be tuned again", tc.source)
			require.Equal(t, own.Source, got.Source)
			cached, err := LoadTable[Choice](path)
			require.NoError(t, err)
			require.Equal(t, own.Source, cached.Source, "the retuned table replaces the cache")
			_, fresh, err = g.c.TunedTable(path, g.streams, o)
			require.NoError(t, err)
			require.False(t, fresh, "the rewritten cache is reused")
		})
	}
}

// TestTunedTableKeepsDamagedCache: a cache that is not a valid table is tuned again, but
// the file is kept beside the new cache as path.damaged, and the warning names both; the
// next call reuses the new cache. fused's TestTunedTableKeepsDamagedCache is its twin.
func TestTunedTableKeepsDamagedCache(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{BufferBytes: 64 << 10})
	path := filepath.Join(t.TempDir(), "tune.json")
	o := TuneOptions{MinBytes: 64, MaxBytes: 64, Measure: MeasureOptions{Target: time.Millisecond, Rounds: 2}}
	for name, body := range map[string]string{
		"bad JSON":       `{"source": "tuned:`,
		"invalid row":    `{"source": "tuned:x", "rows": [{"world": 2, "bucket": 6, "algo": "auto"}]}`,
		"unknown algo":   `{"source": "tuned:x", "rows": [{"world": 2, "bucket": 6, "algo": "butterfly"}]}`,
		"no rows at all": `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
			got, fresh, err := g.c.TunedTable(path, g.streams, o)
			require.ErrorContains(t, err, path+".damaged", "the warning says where the file went")
			require.NotNil(t, got, "a damaged cache is a warning, not a failure")
			require.True(t, fresh)
			require.Equal(t, "tuned:"+g.c.Fingerprint(dtype.F32), got.Source)
			kept, err := os.ReadFile(path + ".damaged")
			require.NoError(t, err)
			require.Equal(t, body, string(kept), "the user's file is kept as it was")
			cached, err := LoadTable[Choice](path)
			require.NoError(t, err)
			require.Equal(t, got, cached)
			_, fresh, err = g.c.TunedTable(path, g.streams, o)
			require.NoError(t, err)
			require.False(t, fresh, "the new cache is reused")
		})
	}
}
