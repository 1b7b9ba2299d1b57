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
// under another fingerprint (another node, another dtype, the cost model's, none) or is
// damaged is measured again and overwritten with this communicator's table, which the next
// call reuses. fused's TestTunedTableCache is the fused table's twin.
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
		{"damaged", "damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.source == "damaged" {
				require.NoError(t, os.WriteFile(path, []byte(`{"source": "tuned:`), 0o644))
			} else {
				foreign := *own
				foreign.Source = tc.source
				require.NoError(t, SaveTable(path, &foreign))
			}
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
