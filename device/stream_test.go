package device_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

func TestStreamRunsInOrder(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	for _, budget := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			s := newStream(t, dev(t, n, 0), "s", budget)
			var l log
			var want []string
			for i := range 60 {
				tag := strconv.Itoa(i)
				if i%3 == 0 {
					require.NoError(t, s.HostFunc(func() { l.add(tag) }))
					want = append(want, tag)
					continue
				}
				grid := 1 + i%5
				require.NoError(t, s.Launch(device.Kernel{
					Name: "k" + tag,
					Grid: grid,
					Block: func(device.Block) error {
						l.add(tag)
						return nil
					},
				}))
				for range grid {
					want = append(want, tag)
				}
			}
			require.NoError(t, s.Synchronize())
			require.Equal(t, want, l.get())
		})
	}
}

func TestHostFuncInStreamOrder(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 0)
	g := newGate()
	var kernelDone, hostSawKernelDone, hostRan atomic.Bool
	require.NoError(t, s.Launch(device.Kernel{Name: "slow", Grid: 1, Block: func(device.Block) error {
		err := g.wait()
		kernelDone.Store(true)
		return err
	}}))
	require.NoError(t, s.HostFunc(func() {
		hostSawKernelDone.Store(kernelDone.Load())
		hostRan.Store(true)
	}))
	time.Sleep(5 * time.Millisecond)
	require.False(t, hostRan.Load(), "host function ran before the kernel ahead of it finished")
	g.open()
	require.NoError(t, s.Synchronize())
	require.True(t, hostRan.Load())
	require.True(t, hostSawKernelDone.Load())
}

func TestGridRunsEachBlockOnce(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	d := dev(t, n, 0)
	for _, tc := range []struct{ grid, budget int }{
		{1, 1}, {1, 4}, {3, 4}, {7, 1}, {7, 3}, {64, 2}, {1000, 4},
	} {
		t.Run(fmt.Sprintf("grid%d/budget%d", tc.grid, tc.budget), func(t *testing.T) {
			s := newStream(t, d, "s", tc.budget)
			counts := make([]atomic.Int32, tc.grid)
			var badGrid atomic.Int32
			require.NoError(t, s.Launch(device.Kernel{Name: "count", Grid: tc.grid, Block: func(b device.Block) error {
				if b.Grid != tc.grid {
					badGrid.Add(1)
				}
				counts[b.Index].Add(1)
				return nil
			}}))
			require.NoError(t, s.Synchronize())
			require.Zero(t, badGrid.Load(), "Block.Grid differs from the kernel's grid")
			for i := range counts {
				require.EqualValuesf(t, 1, counts[i].Load(), "block %d ran %d times", i, counts[i].Load())
			}
		})
	}
}

// TestSMBudgetBoundsConcurrency measures how many blocks of one kernel run at once.
func TestSMBudgetBoundsConcurrency(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	d := dev(t, n, 0)
	for _, budget := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			s := newStream(t, d, "s", budget)
			require.Equal(t, budget, s.SMBudget())
			var c concurrency
			require.NoError(t, s.Launch(device.Kernel{Name: "sleepy", Grid: 12, Block: func(device.Block) error {
				c.enter()
				defer c.leave()
				time.Sleep(time.Millisecond)
				return nil
			}}))
			require.NoError(t, s.Synchronize())
			require.GreaterOrEqual(t, c.max.Load(), int64(1))
			require.LessOrEqual(t, c.max.Load(), int64(budget))
		})
	}
}

// TestSMBudgetIsReached checks that a stream really runs budget blocks at once: each block
// waits until all of them are in flight, which only completes if they run concurrently.
func TestSMBudgetIsReached(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	d := dev(t, n, 0)
	for _, budget := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			s := newStream(t, d, "s", budget)
			var inFlight atomic.Int64
			require.NoError(t, s.Launch(device.Kernel{Name: "rendezvous", Grid: budget, Block: func(b device.Block) error {
				inFlight.Add(1)
				d.Ring()
				return d.WaitUntil(waitLimit, b.Aborted, func() bool { return inFlight.Load() == int64(budget) })
			}}))
			require.NoError(t, s.Synchronize())
		})
	}
}

// TestDeviceSMsBoundConcurrencyAcrossStreams runs two streams whose budgets add up to more
// than the device has: the device's SM count still bounds the blocks in flight.
func TestDeviceSMsBoundConcurrencyAcrossStreams(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	d := dev(t, n, 0)
	a, b := newStream(t, d, "a", 2), newStream(t, d, "b", 2)
	var c concurrency
	var blocks atomic.Int64
	k := device.Kernel{Name: "sleepy", Grid: 8, Block: func(device.Block) error {
		c.enter()
		defer c.leave()
		blocks.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	}}
	for range 3 {
		require.NoError(t, a.Launch(k))
		require.NoError(t, b.Launch(k))
	}
	require.NoError(t, a.Synchronize())
	require.NoError(t, b.Synchronize())
	require.EqualValues(t, 48, blocks.Load())
	require.LessOrEqual(t, c.max.Load(), int64(2))
}

func TestLaunchErrors(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 0)
	noop := func(device.Block) error { return nil }
	for _, tc := range []struct {
		name string
		k    device.Kernel
		want string
	}{
		{"grid 0", device.Kernel{Name: "g0", Grid: 0, Block: noop}, "grid"},
		{"grid -3", device.Kernel{Name: "gneg", Grid: -3, Block: noop}, "-3"},
		{"nil block", device.Kernel{Name: "noblock", Grid: 4}, "Block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Launch(tc.k)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), tc.k.Name)
			require.Contains(t, err.Error(), `stream "s"`)
		})
	}
	require.NoError(t, s.Synchronize(), "a refused launch does not fail the stream")
}

func TestBlockErrorIsSticky(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	d := dev(t, n, 0)
	s := newStream(t, d, "main", 2)
	boom := errors.New("boom")

	var siblingErr atomic.Value
	var badEpilogue, laterEpilogue atomic.Value
	var laterRan, hostRan atomic.Bool
	require.NoError(t, s.Launch(device.Kernel{
		Name: "bad",
		Grid: 2,
		Block: func(b device.Block) error {
			if b.Index == 1 {
				return boom
			}
			// Block 0 waits for something that never happens: only the abort ends it.
			err := d.WaitUntil(waitLimit, b.Aborted, func() bool { return false })
			siblingErr.Store(fmt.Sprint(err, " aborted=", b.Aborted()))
			return err
		},
		Epilogue: func(err error) { badEpilogue.Store(fmt.Sprint(err)) },
	}))
	require.NoError(t, s.Launch(device.Kernel{
		Name:     "later",
		Grid:     3,
		Block:    func(device.Block) error { laterRan.Store(true); return nil },
		Epilogue: func(err error) { laterEpilogue.Store(err) },
	}))
	require.NoError(t, s.HostFunc(func() { hostRan.Store(true) }))

	err := s.Synchronize()
	require.Error(t, err)
	require.ErrorIs(t, err, boom)
	for _, w := range []string{"bad", "block 1/2", "boom", `stream "main"`} {
		require.Contains(t, err.Error(), w)
	}
	require.Equal(t, err, s.Err())
	require.Equal(t, device.ErrAborted.Error()+" aborted=true", siblingErr.Load())
	require.Equal(t, err.Error(), badEpilogue.Load())

	require.False(t, laterRan.Load(), "a kernel after a failure must be skipped")
	le, _ := laterEpilogue.Load().(error)
	require.Error(t, le, "the skipped kernel's epilogue gets an error")
	require.ErrorIs(t, le, boom)
	require.Contains(t, le.Error(), "later")
	require.True(t, hostRan.Load(), "host functions still run in order")

	// Still sticky for work enqueued later.
	require.NoError(t, s.Launch(device.Kernel{Name: "again", Grid: 1, Block: func(device.Block) error { laterRan.Store(true); return nil }}))
	require.ErrorIs(t, s.Synchronize(), boom)
	require.False(t, laterRan.Load())
}

func TestBlockErrorSkipsUnstartedBlocks(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 1})
	s := newStream(t, dev(t, n, 0), "s", 1)
	var ran atomic.Int32
	require.NoError(t, s.Launch(device.Kernel{Name: "first-fails", Grid: 100, Block: func(b device.Block) error {
		ran.Add(1)
		if b.Index == 0 {
			return errors.New("fail")
		}
		return nil
	}}))
	err := s.Synchronize()
	require.Error(t, err)
	require.Contains(t, err.Error(), "block 0/100")
	require.EqualValues(t, 1, ran.Load(), "blocks after the failing one must not start")
}

func TestPanicBecomesError(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    device.Kernel
		want []string
	}{
		{"block", device.Kernel{Name: "panicky", Grid: 4, Block: func(b device.Block) error {
			if b.Index == 2 {
				panic("kaboom")
			}
			return nil
		}}, []string{"panicky", "block 2/4", "panic", "kaboom"}},
		{"nil deref", device.Kernel{Name: "nilderef", Grid: 1, Block: func(device.Block) error {
			var p *int
			return fmt.Errorf("%d", *p)
		}}, []string{"nilderef", "panic", "nil pointer"}},
		{"prologue", device.Kernel{Name: "badpro", Grid: 1, Prologue: func() error { panic("early") }, Block: func(device.Block) error { return nil }},
			[]string{"badpro", "prologue", "panic", "early"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
			s := newStream(t, dev(t, n, 0), "s", 0)
			require.NoError(t, s.Launch(tc.k))
			err := s.Synchronize()
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestPrologueEpilogue(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 4})
	d := dev(t, n, 0)
	for _, grid := range []int{1, 5, 100} {
		t.Run(fmt.Sprintf("grid%d", grid), func(t *testing.T) {
			s := newStream(t, d, "s", 0)
			var prologues, epilogues, blocks, early, late atomic.Int32
			var epiErr, epiBlocks atomic.Value
			require.NoError(t, s.Launch(device.Kernel{
				Name:     "pe",
				Grid:     grid,
				Prologue: func() error { prologues.Add(1); return nil },
				Block: func(device.Block) error {
					if prologues.Load() != 1 {
						early.Add(1)
					}
					if epilogues.Load() != 0 {
						late.Add(1)
					}
					blocks.Add(1)
					return nil
				},
				Epilogue: func(err error) {
					epilogues.Add(1)
					epiErr.Store(fmt.Sprint(err))
					epiBlocks.Store(blocks.Load())
				},
			}))
			require.NoError(t, s.Synchronize())
			require.EqualValues(t, 1, prologues.Load())
			require.EqualValues(t, 1, epilogues.Load())
			require.Zero(t, early.Load(), "a block ran before the prologue")
			require.Zero(t, late.Load(), "a block ran after the epilogue")
			require.Equal(t, "<nil>", epiErr.Load())
			require.EqualValues(t, grid, epiBlocks.Load())
		})
	}
}

func TestPrologueError(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 1, SMs: 2})
	s := newStream(t, dev(t, n, 0), "s", 0)
	bad := errors.New("no setup")
	var blockRan atomic.Bool
	var epiErr atomic.Value
	require.NoError(t, s.Launch(device.Kernel{
		Name:     "pro",
		Grid:     4,
		Prologue: func() error { return bad },
		Block:    func(device.Block) error { blockRan.Store(true); return nil },
		Epilogue: func(err error) { epiErr.Store(err) },
	}))
	err := s.Synchronize()
	require.ErrorIs(t, err, bad)
	require.Contains(t, err.Error(), "pro")
	require.Contains(t, err.Error(), "prologue")
	require.False(t, blockRan.Load())
	got, _ := epiErr.Load().(error)
	require.ErrorIs(t, got, bad)
}

func TestNewStreamBudget(t *testing.T) {
	n := newNode(t, device.NodeConfig{Devices: 2, SMs: 4})
	d := dev(t, n, 1)
	for _, tc := range []struct {
		budget, want int
		ok           bool
	}{
		{0, 4, true}, {1, 1, true}, {4, 4, true}, {-1, 0, false}, {5, 0, false}, {100, 0, false},
	} {
		t.Run(strconv.Itoa(tc.budget), func(t *testing.T) {
			s, err := d.NewStream("comm", tc.budget)
			if !tc.ok {
				require.Error(t, err)
				require.Nil(t, s)
				for _, w := range []string{"device 1", `"comm"`, strconv.Itoa(tc.budget), "0..4"} {
					require.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, s.SMBudget())
			require.Equal(t, "comm", s.Name())
			require.Same(t, d, s.Device())
			require.Equal(t, `device 1 stream "comm"`, s.String())
		})
	}
}

func TestCloseStopsStreams(t *testing.T) {
	n, err := device.NewNode(device.NodeConfig{Devices: 2, SMs: 2})
	require.NoError(t, err)
	d := dev(t, n, 1)
	s := newStream(t, d, "s", 0)
	var ran atomic.Bool
	require.NoError(t, s.Launch(device.Kernel{Name: "before", Grid: 1, Block: func(device.Block) error { ran.Store(true); return nil }}))
	require.NoError(t, s.Synchronize())
	require.True(t, ran.Load())

	require.NoError(t, n.Close())
	err = s.Launch(device.Kernel{Name: "after", Grid: 1, Block: func(device.Block) error { return nil }})
	require.ErrorIs(t, err, device.ErrStreamClosed)
	require.Contains(t, err.Error(), `stream "s"`)
	require.ErrorIs(t, s.HostFunc(func() {}), device.ErrStreamClosed)
	require.ErrorIs(t, s.Synchronize(), device.ErrStreamClosed)
	require.ErrorIs(t, s.Record(device.NewEvent()), device.ErrStreamClosed)
	_, err = d.NewStream("late", 0)
	require.Error(t, err)
	require.Contains(t, err.Error(), "closed")
	require.NoError(t, n.Close(), "closing twice is harmless")
}
