package bench

import (
	"math"
	"sort"
	"time"
)

// LatencyStats summarizes latencies in milliseconds.
type LatencyStats struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
}

// Stats returns the mean and percentiles of xs (numpy's linear interpolation), zeros when
// xs is empty. It sorts xs in place.
func Stats(xs []float64) LatencyStats {
	if len(xs) == 0 {
		return LatencyStats{}
	}
	sort.Float64s(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return LatencyStats{Mean: sum / float64(len(xs)), P50: percentile(xs, 50), P90: percentile(xs, 90), P99: percentile(xs, 99)}
}

// percentile is the p-th percentile of sorted xs, interpolating linearly between ranks.
func percentile(sorted []float64, p float64) float64 {
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// Ms is d in milliseconds, as the reports print durations.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
