package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	s := Stats([]float64{4, 1, 3, 2})
	require.InDelta(t, 2.5, s.Mean, 1e-12)
	require.InDelta(t, 2.5, s.P50, 1e-12)
	require.InDelta(t, 3.7, s.P90, 1e-12)
	require.InDelta(t, 3.97, s.P99, 1e-12)
	require.Equal(t, LatencyStats{}, Stats(nil))
}
