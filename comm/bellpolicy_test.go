package comm

import (
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

// TestRankBellYieldsBeforeSleep: where the ranks' threads fit on the cores, a rank's shared
// bell spins and then polls, yielding, for sharedYield before its waiter counts itself a
// sleeper: the futex wake-ups it avoids kept pairs of ranks in a slow mode.
func TestRankBellYieldsBeforeSleep(t *testing.T) {
	c := &Communicator{n: 1}
	if !c.ranksFitCores() {
		t.Skip("GOMAXPROCS exceeds the cores: a rank's waiters do not spin here")
	}
	ctl := make([]uint64, ctlWords)
	b := c.bellOf(0, ctl)
	require.True(t, b.spins)
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&ctl[ctlBell])), device.SharedBellWords)
	start, slept := time.Now(), false
	require.NoError(t, b.WaitUntil(10*time.Second, nil, func() bool {
		slept = slept || atomic.LoadUint32(&words[1]) > 0 // the bell's sleepers word
		return slept || time.Since(start) > sharedSpin+sharedYield/2
	}))
	require.False(t, slept, "the waiter slept within its spin and half its yielding polls")
}
