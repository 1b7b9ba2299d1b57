package comm

// BusBW converts an all-reduce's algorithm bandwidth (bytes per rank / time) into bus
// bandwidth as nccl-tests reports it, algbw · 2(n-1)/n, which is comparable with the link's
// peak. n < 1 gives 0.
func BusBW(algbw float64, n int) float64 {
	if n < 1 {
		return 0
	}
	return algbw * 2 * float64(n-1) / float64(n)
}

// AllGatherBusBW converts an all-gather's (or reduce-scatter's) algorithm bandwidth into
// bus bandwidth as nccl-tests reports it: algbw · (n-1)/n. n < 1 gives 0.
func AllGatherBusBW(algbw float64, n int) float64 {
	if n < 1 {
		return 0
	}
	return algbw * float64(n-1) / float64(n)
}
