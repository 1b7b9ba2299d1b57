package device

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStoreReleaseStores: the release stores store their value, whole.
func TestStoreReleaseStores(t *testing.T) {
	var w32 [3]uint32
	var w64 [3]uint64
	StoreRelease32(&w32[1], 0xdeadbeef)
	StoreRelease64(&w64[1], 0x0123456789abcdef)
	require.Equal(t, [3]uint32{0, 0xdeadbeef, 0}, w32)
	require.Equal(t, [3]uint64{0, 0x0123456789abcdef, 0}, w64)
}

// TestFenceOrdersStoreBeforeLoad is the store-buffering litmus test, the shape of a
// doorbell's Ring against its sleeper: each of two threads stores its flag with a release
// store, fences, and loads the other's. Without the fence x86 lets both loads pass their
// thread's store and see 0 (the store still in the store buffer), which on a doorbell is a
// wake-up lost (in 1 to 820 rounds of a run here); with it, at least one thread sees the
// other's flag, in every round. Rounds stop after a second, on a loaded machine.
func TestFenceOrdersStoreBeforeLoad(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Skip("the litmus test needs two threads running at once")
	}
	const rounds, stop = 1000000, math.MaxUint32
	type line struct {
		v uint32
		_ [15]uint32
	}
	var x, y line
	var start, done atomic.Uint32
	var bothZero, ran atomic.Int64
	var r1, r2 uint32
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	side := func(mine, theirs, got *uint32) {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := uint32(1); ; i++ {
			s := start.Load()
			for ; s < i; s = start.Load() { // both threads begin round i together
			}
			if s == stop {
				return
			}
			StoreRelease32(mine, i)
			Fence()
			*got = atomic.LoadUint32(theirs)
			if done.Add(1) == 2*i { // the second to finish checks the round, starts the next
				if r1 < i && r2 < i {
					bothZero.Add(1)
				}
				ran.Add(1)
				next := i + 1
				if i == rounds || i%1024 == 0 && time.Now().After(deadline) {
					next = stop
				}
				start.Store(next)
			}
		}
	}
	wg.Add(2)
	go side(&x.v, &y.v, &r1)
	go side(&y.v, &x.v, &r2)
	start.Store(1)
	wg.Wait()
	require.Zero(t, bothZero.Load(), "rounds where neither thread saw the other's store, of %d", ran.Load())
}
