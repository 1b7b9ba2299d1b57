package comm

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tpslice/tpslice/device"
)

// TestWaitWithinAPollRoundReadsNoClock pins a small call's cheap wait: where waiters spin
// (the ranks' threads fit on the cores), a peer that is there within waitPolls polls costs
// no clock read and no record update (it counts as no wait), and a longer wait reads the
// clock twice and names what it waited for; where they do not, one check is all before the
// wait gives its core away.
func TestWaitWithinAPollRoundReadsNoClock(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{})
	r := g.c.Rank(0)
	cl := &call{r: r}
	readyAfter := func(k int) func() bool {
		polls := 0
		return func() bool { polls++; return polls > k }
	}
	b := device.Block{Grid: 1}
	own := &r.peers[r.rank].bell
	own.spins = true
	// 48 polls: within the round, and within the bell's own first polls, so a wait that
	// read the clock before its round still returns here, with the reads to show for it
	require.NoError(t, cl.wait(b, "soon", readyAfter(48), nil))
	require.Zero(t, r.clock.reads, "clock reads of a wait within the round")
	require.Zero(t, cl.waited)
	require.Empty(t, cl.where, "a wait within the round is no wait to name")

	var came atomic.Bool // a peer that comes a millisecond later, and rings
	rang := make(chan struct{})
	go func() {
		defer close(rang)
		time.Sleep(time.Millisecond)
		came.Store(true)
		own.Ring()
	}()
	require.NoError(t, cl.wait(b, "later", came.Load, nil))
	require.Equal(t, uint64(2), r.clock.reads, "clock reads of a wait past the round")
	require.Equal(t, "later", cl.where)
	<-rang // the peer's Ring reads the bell, which the next case changes

	own.spins = false
	polls := 0
	require.NoError(t, cl.wait(b, "oversubscribed", func() bool { polls++; return polls > 1 }, nil))
	require.Equal(t, uint64(4), r.clock.reads, "a waiter that does not spin checks once, then waits")
	require.Equal(t, 2, polls)
}

// TestCallClockFollowsTheSystemClock: a reading is monotonic time since the base, so it
// never goes back, and as a time.Time it stays with time.Now.
func TestCallClockFollowsTheSystemClock(t *testing.T) {
	c := newCallClock()
	prev := c.now()
	for range 1000 {
		now := c.now()
		require.GreaterOrEqual(t, now, prev)
		prev = now
	}
	require.InDelta(t, 0, time.Since(timeAt(c.base, prev)).Seconds(), 0.5)
	require.InDelta(t, 0, time.Now().Sub(timeAt(c.base, prev)).Seconds(), 0.5, "wall time")
	require.InDelta(t, 0, (c.since(prev) - time.Duration(c.now()-prev)).Seconds(), 0.5)
	require.Equal(t, uint64(1003), c.reads)
}
