package perf

import (
	"math"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// alphaBeta is the idealised α-β model of α and β: tpslice's collectives on a profile
// without a calibration, which offers NVLS.
func alphaBeta(alpha time.Duration, beta float64) Costs {
	return CostsOf(hw.Profile{Name: "α-β", Alpha: alpha, LinkBytesPerSec: beta, Fabric: device.NVSwitch, NVLS: true}, TPSlice)
}

// allReduce is an all-reduce of bytes per rank over n ranks with algorithm a on one host.
func allReduce(a comm.Algo, n int, bytes int64) Collective {
	return Collective{Op: device.OpAllReduce, Algo: a, Ranks: n, Bytes: bytes}
}

// idealised is p without its calibration: the α-β model of its α and β.
func idealised(p hw.Profile) hw.Profile {
	p.Calibration = nil
	return p
}

// oneShotTwoShotCrossover is the message size S* in bytes above which the α-β model's
// two-shot beats one-shot: S* = 2αβ / ((n-1)(1 - 2/n)), about 257 KB at n = 8, α = 1.5 µs,
// β = 450e9 B/s. For n ≤ 2 one-shot never loses and the result is +Inf.
func oneShotTwoShotCrossover(n int, alpha time.Duration, beta float64) float64 {
	if n <= 2 {
		return math.Inf(1)
	}
	nf := float64(n)
	return 2 * alpha.Seconds() * beta / ((nf - 1) * (1 - 2/nf))
}
