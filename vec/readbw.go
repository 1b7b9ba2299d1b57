package vec

import (
	"sync"
	"time"
)

// ReadBandwidth measures this machine's memory read bandwidth in bytes per second, the
// roofline of memory-bound decode: threads goroutines each stream their share of a buffer
// of the given size (far larger than the caches) with ReadSum, and the best of rounds
// counts. It allocates and touches the buffer first, so page faults stay out of the timing.
func ReadBandwidth(threads, bytes, rounds int) float64 {
	threads, rounds = max(threads, 1), max(rounds, 1)
	buf := make([]float32, max(bytes/4, threads))
	for i := range buf {
		buf[i] = float32(i & 1023)
	}
	var best time.Duration
	sink := make([]float32, threads) // the sums land in memory, so no read is optimized away
	for r := range rounds {
		start := time.Now()
		var wg sync.WaitGroup
		for t := range threads {
			part := buf[len(buf)*t/threads : len(buf)*(t+1)/threads]
			wg.Go(func() { sink[t] = ReadSum(part) })
		}
		wg.Wait()
		if d := time.Since(start); r == 0 || d < best {
			best = d
		}
	}
	return float64(len(buf)*4) / best.Seconds()
}
