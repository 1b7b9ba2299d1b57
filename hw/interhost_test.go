package hw

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInterHost: the NVLink profiles carry their InfiniBand rails (NDR 400 Gb/s per GPU,
// HDR 200 Gb/s on A100), the PCIe ones none; Validate names a half-set link.
func TestInterHost(t *testing.T) {
	for name, want := range map[string]Link{
		"h100-sxm":  {BytesPerSec: 50e9, Latency: 2700 * time.Nanosecond},
		"h200":      {BytesPerSec: 50e9, Latency: 2700 * time.Nanosecond},
		"b200":      {BytesPerSec: 50e9, Latency: 2700 * time.Nanosecond},
		"a100-sxm":  {BytesPerSec: 25e9, Latency: 2700 * time.Nanosecond},
		"l40s-pcie": {},
		"pcie":      {},
	} {
		p, err := Lookup(name)
		require.NoError(t, err)
		require.Equal(t, want, p.InterHost, name)
		require.Equal(t, want.BytesPerSec > 0, p.InterHost.Network(), name)
	}
	p, err := Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	require.True(t, p.InterHost.Network(), "the ideal variant keeps the network")
	p.InterHost.BytesPerSec = 0
	require.ErrorContains(t, p.Validate(), `profile "h100-sxm-ideal": InterHost = {BytesPerSec:0 Latency:2.7µs}, want zero, or BytesPerSec > 0`)
}
