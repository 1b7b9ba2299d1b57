package perf

import (
	"github.com/tpslice/tpslice/comm"
	"math"
	"slices"

	"github.com/tpslice/tpslice/hw"
)

// idealFastest returns the offered algorithm with the lowest α-β model time at bytes; ties go to
// the earlier one in offered's order.
func idealFastest(p hw.Profile, n int, bytes int64) comm.Algo {
	alpha, beta := p.Alpha.Seconds(), p.LinkBytesPerSec
	best, bestT := comm.Algo(0), math.Inf(1)
	for _, a := range comm.Offered(p.Fabric, p.NVLS, n) {
		t, _ := modelSeconds(a, n, float64(bytes), alpha, beta)
		if best == 0 || t < bestT {
			best, bestT = a, t
		}
	}
	return best
}

// idealTable builds the selection table that the α-β model gives for profile p: for each
// world size in worlds and each bucket from 0 to Bucket(maxBytes), the offered algorithm
// with the lowest ModelTime at the bucket's upper bound (BucketBytes). The algorithms
// offered: one-shot, two-shot, ring and tree; NVLS only where p.NVLS; on a PCIe fabric with
// more than two ranks, ring only (vLLM's rule). Lamport is priced as one-shot and ties go to
// one-shot, so the model never picks it; ties otherwise prefer one-shot, then NVLS, then
// two-shot, then ring, then tree (which the model never prefers on one node). World sizes
// below 1 and repeats are skipped; maxBytes below 1 means bucket 0 only. Source is
// "model:" + p.Name. p should pass p.Validate().
func idealTable(p hw.Profile, worlds []int, maxBytes int64) *comm.Table {
	ws := slices.Clone(worlds)
	slices.Sort(ws)
	ws = slices.Compact(ws)
	top := comm.Bucket(maxBytes)
	t := &comm.Table{Source: "model:" + p.Name}
	for _, n := range ws {
		if n < 1 {
			continue
		}
		for b := 0; b <= top; b++ {
			t.Rows = append(t.Rows, comm.TableRow{World: n, Bucket: b, Algo: idealFastest(p, n, comm.BucketBytes(b))})
		}
	}
	return t
}
