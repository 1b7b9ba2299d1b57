package comm

import "github.com/tpslice/tpslice/device"

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

// OpBusBW is the bus bandwidth of collective op as nccl-tests reports it: BusBW for an
// all-reduce, AllGatherBusBW for an all-gather or a reduce-scatter (nccl-tests'
// PERFORMANCE.md: each rank receives (n-1)/n of the S bytes the size column counts).
func OpBusBW(op device.CollectiveOp, algbw float64, n int) float64 {
	if op == device.OpAllGather || op == device.OpReduceScatter {
		return AllGatherBusBW(algbw, n)
	}
	return BusBW(algbw, n)
}
