package comm

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestProtocolFaults: TestFaultKinds for the ring and the tree under LL and LL128. A
// stalled or skipping rank is named by the peers' deadline (they see no data and find its
// entered word behind), a corrupted flag (one of two pieces ahead) by the peer that reads
// it, a panic by the rank itself; a rebuilt communicator then runs clean.
func TestProtocolFaults(t *testing.T) {
	for _, kind := range []FaultKind{FaultStall, FaultPanic, FaultSkip, FaultCorrupt} {
		for _, n := range []int{2, 8} {
			for _, ch := range protoChoices {
				t.Run(fmt.Sprintf("%v/tp%d/%v", kind, n, ch), func(t *testing.T) { faultCase(t, kind, n, ch) })
			}
		}
	}
}

// TestProtocolSkipNextCall: a rank that skips a call and goes on writes its next call's
// data with the flags the peers wait for; the peer that reads them finds the rank's
// entered word on the next call and fails at once, naming it, instead of summing it.
func TestProtocolSkipNextCall(t *testing.T) {
	for _, ch := range protoChoices {
		t.Run(ch.String(), func(t *testing.T) {
			g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 20 * time.Second, Fault: NewFaultInjector(Fault{Rank: 2, Call: 1, Kind: FaultSkip})})
			bufs := g.alloc(t, dtype.F32, 100)
			start := time.Now()
			for range 2 {
				for r := range 4 {
					_ = g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, bufs[r], bufs[r], 100) // refused once failed
				}
			}
			g.syncAll()
			require.Less(t, time.Since(start), 10*time.Second, "a skipped call must not wait for the deadline")
			require.ErrorContains(t, g.c.Err(), "rank 2 already began seq 1 allreduce f32 count 100 ("+ch.String()+"), so it skipped seq 0")
		})
	}
}

// TestProtocolMissingRank: rank 3 never issues the call; every other rank fails by the
// deadline naming rank 3, however far from it in the ring or the trees it is.
func TestProtocolMissingRank(t *testing.T) {
	for _, ch := range protoChoices {
		t.Run(ch.String(), func(t *testing.T) {
			g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 300 * time.Millisecond})
			bufs := g.alloc(t, dtype.F32, 1000)
			for r := range 4 {
				require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, bufs[r], bufs[r], 1000))
			}
			for r := range 3 {
				require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, bufs[r], bufs[r], 1000))
			}
			errs := g.syncAll()
			require.NoError(t, errs[3])
			var named bool
			for r := range 3 {
				require.Error(t, errs[r], "rank %d", r)
				require.Contains(t, errs[r].Error(), "rank(s) [3] did not arrive")
				require.Contains(t, errs[r].Error(), "\n  rank 3: seq 0 allreduce "+ch.String()+" f32 count 1000, done")
				named = named || errors.Is(errs[r], device.ErrDeadline)
			}
			require.True(t, named, "no rank's own deadline named the missing one: %v", errs)
		})
	}
}
