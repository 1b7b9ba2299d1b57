package comm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

func TestParseFault(t *testing.T) {
	cases := []struct {
		spec    string
		want    Fault
		wantErr string
	}{
		{"rank:3,call:5,kind:stall", Fault{Rank: 3, Call: 5, Kind: FaultStall}, ""},
		{"kind:PANIC, rank:0 ,call:1", Fault{Rank: 0, Call: 1, Kind: FaultPanic}, ""},
		{"call:7,kind:skip,rank:1", Fault{Rank: 1, Call: 7, Kind: FaultSkip}, ""},
		{"rank:7,call:100,kind:corrupt", Fault{Rank: 7, Call: 100, Kind: FaultCorrupt}, ""},
		{"kind:exit,rank:0,call:3", Fault{Rank: 0, Call: 3, Kind: FaultExit}, ""},
		{"rank:1,call:2,kind:foo", Fault{}, `TPSLICE_FAULT: kind "foo": want stall, panic, skip, corrupt or exit`},
		{"rank:x,call:2,kind:skip", Fault{}, `TPSLICE_FAULT: rank "x": want a rank number from 0`},
		{"rank:-1,call:2,kind:skip", Fault{}, `TPSLICE_FAULT: rank "-1": want a rank number from 0`},
		{"rank:1,call:0,kind:skip", Fault{}, `TPSLICE_FAULT: call "0": want a call number from 1`},
		{"rank:1,call:two,kind:skip", Fault{}, `TPSLICE_FAULT: call "two"`},
		{"rank:1,kind:skip", Fault{}, `TPSLICE_FAULT: "rank:1,kind:skip" has no call (want rank:R,call:N,kind:K)`},
		{"rank:1,call:2,kind:skip,rank:2", Fault{}, `TPSLICE_FAULT: rank given twice`},
		{"rank:1,call:2,kind:skip,seed:3", Fault{}, `TPSLICE_FAULT: field "seed": want rank, call or kind`},
		{"rank1,call:2,kind:skip", Fault{}, `TPSLICE_FAULT: field "rank1": want key:value`},
		{"", Fault{}, `TPSLICE_FAULT: field "": want key:value`},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			f, err := ParseFault(tc.spec)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, f)
			back, err := ParseFault(f.String())
			require.NoError(t, err)
			require.Equal(t, f, back)
		})
	}
}

func TestFaultFromEnv(t *testing.T) {
	t.Setenv(EnvFault, "")
	fi, err := FaultFromEnv()
	require.NoError(t, err)
	require.Nil(t, fi)
	t.Setenv(EnvFault, "rank:1,call:2,kind:skip")
	fi, err = FaultFromEnv()
	require.NoError(t, err)
	require.Equal(t, Fault{Rank: 1, Call: 2, Kind: FaultSkip}, fi.Fault())
	require.False(t, fi.Fired())
	t.Setenv(EnvFault, "rank:1")
	_, err = FaultFromEnv()
	require.ErrorContains(t, err, "TPSLICE_FAULT")
}

// faultTimeout is the collective deadline of the fault tests: short, so that they end soon,
// but far above what a call takes on a loaded machine under -race.
const faultTimeout = 500 * time.Millisecond

// TestFaultKinds: every kind of fault, at TP 2 and TP 8, with every algorithm, ends within
// the deadline with an error naming the faulty rank, the op and the sequence number, and
// the last call of every rank; a fresh communicator sharing the injector then runs clean.
func TestFaultKinds(t *testing.T) {
	for _, kind := range []FaultKind{FaultStall, FaultPanic, FaultSkip, FaultCorrupt} {
		for _, n := range []int{2, 8} {
			for _, algo := range Algos {
				t.Run(fmt.Sprintf("%v/tp%d/%v", kind, n, algo), func(t *testing.T) { faultCase(t, kind, n, Choice{Algo: algo}) })
			}
		}
	}
}

// faultCase is one case of TestFaultKinds: fault kind at TP n in an all-reduce of ch.
func faultCase(t *testing.T, kind FaultKind, n int, ch Choice) {
	culprit := map[FaultKind]string{
		FaultStall:   "rank(s) [%d] did not arrive",
		FaultSkip:    "rank(s) [%d] did not arrive",
		FaultPanic:   "comm: rank %d seq 1 allreduce",
		FaultCorrupt: "rank %d wrote 0x",
	}
	count := 1000
	if n == 2 {
		count = 70000 // two blocks, and two flag-free chunks
	}
	bad := n - 1
	fi := NewFaultInjector(Fault{Rank: bad, Call: 2, Kind: kind})
	cfg := Config{Timeout: faultTimeout, Fault: fi}
	g := newGroup(t, n, device.NVSwitch, cfg)
	ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
	Fill(ins, count, 1)
	allReduce := func(g *group) {
		for r := range n {
			require.NoError(t, g.c.Rank(r).AllReduceProto(g.streams[r], ch.Algo, ch.Proto, ins[r], outs[r], count))
		}
	}
	allReduce(g) // call 1 of every rank: a clean one, for the record
	for r, err := range g.syncAll() {
		require.NoError(t, err, "rank %d", r)
	}
	start := time.Now()
	allReduce(g) // call 2: the fault fires on rank bad
	errs := g.syncAll()
	elapsed := time.Since(start)
	require.Less(t, elapsed, faultTimeout+2*time.Second)
	require.True(t, fi.Fired())

	err := g.c.Err()
	require.Error(t, err)
	want := culprit[kind]
	if kind == FaultCorrupt && ch.Algo == Lamport {
		want = culprit[FaultStall] // the data is the flag: the peers see no data
	}
	msg := err.Error()
	require.Contains(t, msg, fmt.Sprintf(want, bad))
	require.Contains(t, msg, "seq 1 allreduce f32 count")
	for r := range n { // the last call of every rank: seq 0 where it had not begun seq 1
		require.Contains(t, msg, fmt.Sprintf("\n  rank %d: seq ", r))
	}
	require.Regexp(t, fmt.Sprintf("\n  rank %d: seq 1 allreduce %v f32 count %d, .*\\(injected %v\\)", bad, ch, count, kind), msg)
	for r, err := range errs {
		if r != bad {
			require.Error(t, err, "rank %d", r)
		}
	}
	if kind == FaultStall || kind == FaultPanic {
		require.Error(t, errs[bad])
	}
	if kind == FaultPanic {
		require.ErrorIs(t, err, ErrInjected)
	}
	rec, ok := g.c.Recorder(bad).Last()
	require.True(t, ok)
	require.Equal(t, kind, rec.Fault)

	// The engine's recovery: close, rebuild with the same injector, go on. The clean call
	// has no fault for a deadline to catch, so it gets a long one: at TP 8 under -race on a
	// loaded machine a healthy call has taken longer than faultTimeout.
	clean := cfg
	clean.Timeout = 20 * time.Second
	fresh := rebuild(t, g, clean)
	for _, out := range outs {
		clear(out.Float32s())
	}
	allReduce(fresh)
	for r, err := range fresh.syncAll() {
		require.NoError(t, err, "rank %d after the rebuild", r)
	}
	checkAllReduce(t, ins, outs, count)
	require.NoError(t, fresh.c.Err())
}

// rebuild closes g's communicator and returns a new one over the same node, as the engine
// rebuilds after a failure, with one new stream per rank.
func rebuild(t *testing.T, g *group, cfg Config) *group {
	require.NoError(t, g.c.Close())
	c, err := New(g.node, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	fresh := &group{node: g.node, c: c}
	for r := range c.Size() {
		s, err := c.Rank(r).Device().NewStream("rebuilt", 0)
		require.NoError(t, err)
		fresh.streams = append(fresh.streams, s)
	}
	return fresh
}

// TestFaultSkipNextCall: a rank that skips a call and goes on is caught at its next call,
// at once, not at the deadline: its barrier would be taken for the peers' skipped one.
func TestFaultSkipNextCall(t *testing.T) {
	for _, algo := range []Algo{OneShot, Ring, TwoShot, Tree} {
		t.Run(algo.String(), func(t *testing.T) {
			g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 20 * time.Second, Fault: NewFaultInjector(Fault{Rank: 2, Call: 1, Kind: FaultSkip})})
			bufs := g.alloc(t, dtype.F32, 100)
			start := time.Now()
			for range 2 {
				for r := range 4 {
					_ = g.c.Rank(r).AllReduceAlgo(g.streams[r], algo, bufs[r], bufs[r], 100) // refused once failed
				}
			}
			g.syncAll()
			require.Less(t, time.Since(start), 10*time.Second, "a skipped call must not wait for the deadline")
			require.ErrorContains(t, g.c.Err(), "rank 2 already began seq 1 allreduce f32 count 100 ("+algo.String()+"), so it skipped seq 0")
		})
	}
}

// TestCloseEndsStall: closing a communicator ends a stalled rank and its waiting peers
// at once, long before the deadline.
func TestCloseEndsStall(t *testing.T) {
	g := newGroup(t, 4, device.NVSwitch, Config{Timeout: time.Minute, Fault: NewFaultInjector(Fault{Rank: 1, Call: 1, Kind: FaultStall})})
	bufs := g.alloc(t, dtype.F32, 100)
	for r := range 4 {
		require.NoError(t, g.c.Rank(r).AllReduce(g.streams[r], bufs[r], bufs[r], 100))
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	require.NoError(t, g.c.Close())
	for r, err := range g.syncAll() {
		require.ErrorIs(t, err, ErrFailed, "rank %d", r)
		require.ErrorContains(t, err, "communicator closed")
	}
	require.Less(t, time.Since(start), 10*time.Second)
	require.ErrorIs(t, g.c.Err(), ErrClosed)
}

// TestStallAlone: a stalled rank with no peer to give up ends by itself, after twice the
// deadline.
func TestStallAlone(t *testing.T) {
	g := newGroup(t, 1, device.NVSwitch, Config{Timeout: 100 * time.Millisecond, Fault: NewFaultInjector(Fault{Rank: 0, Call: 1, Kind: FaultStall})})
	bufs := g.alloc(t, dtype.F32, 10)
	require.NoError(t, g.c.Rank(0).AllReduce(g.streams[0], bufs[0], bufs[0], 10))
	err := g.streams[0].Synchronize()
	require.ErrorIs(t, err, ErrInjected)
	require.ErrorContains(t, err, "comm: rank 0 seq 0 allreduce f32 count 10 (oneshot) block 0 stall: stalled for 200ms and no peer gave up")
}

// TestKernelPanic: a panic in a collective's kernel (not only an injected one) becomes the
// error of its rank, and its peers stop waiting at once.
func TestKernelPanic(t *testing.T) {
	g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 20 * time.Second})
	bufs := g.alloc(t, dtype.F32, 64)
	start := time.Now()
	for r := range 4 {
		require.NoError(t, g.c.Rank(r).LaunchCollective(g.streams[r], Collective{
			Op: "test", Algo: OneShot, In: bufs[r], Out: bufs[r], Count: 64, OutCount: 64, Chunk: 64,
			Block: func(k *CallCtx, b device.Block, off, n int) error {
				if k.Rank() == 3 {
					var s []int
					_ = s[n] // index out of range
				}
				return k.Barrier(b, "test barrier")
			},
		}))
	}
	errs := g.syncAll()
	require.Less(t, time.Since(start), 10*time.Second)
	require.ErrorContains(t, errs[3], "comm: rank 3 seq 0 test f32 count 64 (oneshot) block 0 panic: runtime error: index out of range")
	for r := range 3 {
		require.ErrorIs(t, errs[r], ErrFailed, "rank %d", r)
		require.ErrorContains(t, errs[r], "comm: rank 3 seq 0 test")
	}
	rec, ok := g.c.Recorder(3).Last()
	require.True(t, ok)
	require.Equal(t, Failed, rec.State)
}

// TestFaultBackToBack: many calls with an injector whose call never comes run clean.
func TestFaultBackToBack(t *testing.T) {
	fi := NewFaultInjector(Fault{Rank: 1, Call: 1 << 40, Kind: FaultPanic})
	g := newGroup(t, 4, device.NVSwitch, Config{Timeout: 20 * time.Second, Fault: fi})
	const count = 3000
	ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
	Fill(ins, count, 7)
	for i := range 200 {
		for r := range 4 {
			require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], Algos[i%len(Algos)], ins[r], outs[r], count))
		}
	}
	for r, err := range g.syncAll() {
		require.NoError(t, err, "rank %d", r)
	}
	checkAllReduce(t, ins, outs, count)
	require.False(t, fi.Fired())
	require.NoError(t, g.c.Err())
}

func TestFaultRankOutOfRange(t *testing.T) {
	g := newGroup(t, 2, device.NVLinkMesh, Config{})
	_, err := New(g.node, Config{Fault: NewFaultInjector(Fault{Rank: 2, Call: 1, Kind: FaultSkip})})
	require.ErrorContains(t, err, "comm: TPSLICE_FAULT rank:2,call:1,kind:skip: rank 2, but the communicator has 2 ranks")
}

// TestFlight: the snapshot lists every rank's calls, oldest first, one line each.
func TestFlight(t *testing.T) {
	g := newGroup(t, 2, device.NVSwitch, Config{})
	bufs := g.alloc(t, dtype.BF16, 10)
	for range 3 {
		for r := range 2 {
			require.NoError(t, g.c.Rank(r).AllReduceAlgo(g.streams[r], OneShot, bufs[r], bufs[r], 10))
		}
	}
	for _, err := range g.syncAll() {
		require.NoError(t, err)
	}
	lines := strings.Split(g.c.Flight(0).String(), "\n")
	require.Len(t, lines, 6)
	for i, line := range lines {
		require.True(t, strings.HasPrefix(line, fmt.Sprintf("rank %d: seq %d allreduce oneshot bf16 count 10, done at ", i/3, i%3)), line)
	}
	f := g.c.Flight(1)
	require.Len(t, f.Ranks, 2)
	require.Len(t, f.Ranks[1], 1)
	require.Equal(t, uint64(2), f.Ranks[1][0].Seq)
	require.Equal(t, "rank 0: no collective started\nrank 1: no collective started", newGroup(t, 2, device.NVSwitch, Config{}).c.Flight(0).String())
}
