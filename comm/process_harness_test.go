//go:build linux

package comm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/vec"
)

// The process tests (process_test.go) run ranks 1..n-1 as real processes, the test binary
// started again in a rank's role (TestMain), and the test process as rank 0 and the
// driver: it relays the handles' all-gather, watches its children with pidfds and compares
// every rank's results with an in-process communicator's over the same seeded inputs.

// Environment of a rank process.
const (
	envSocket = "TPSLICE_TEST_SOCKET"
	envRank   = "TPSLICE_TEST_RANK"
	envSpec   = "TPSLICE_TEST_SPEC"
)

// Message kinds between the driver and a rank process (ipc reserves those below 16).
const (
	kindHashes = 16 + iota // a rank's result hashes, one uint64 per call
	kindFailed             // a rank's error, as text
	kindClose              // the driver: every rank finished; close and exit
)

// Roles of a rank process.
const (
	roleRank  = "rank"  // runs the calls
	roleStall = "stall" // runs the calls before spec.StopAt, then waits until killed
	// roleOther runs every call with twice its count: a rank that issues other calls
	roleOther = "other"
)

// procSpec is what every rank of a process group runs: its node, communicator and calls.
type procSpec struct {
	N, Hosts     int
	Fabric       device.Fabric
	BufferBytes  int
	LamportBytes int
	Blocks       int
	Wire         Wire
	Timeout      time.Duration
	Calls        []procCall
	StopAt       int // roleStall: the call the rank never issues
	// Graph captures each call into a graph, registers the graph's buffers and replays
	// it Replays times, every replay on new inputs.
	Graph   bool
	Replays int
	Batch   int // roleBench: calls a batch
	// BackToBack issues every call before the ranks synchronize (as a decode step does);
	// otherwise each call is synchronized before the next.
	BackToBack bool
	// Blocking issues every all-reduce of a rank that runs alone on its goroutine (a
	// rank process, the driver's rank 0) with AllReduceWait, so that it runs on the host
	// where the stream is idle; the in-process reference keeps AllReduceProto.
	Blocking bool
}

// procCall is one collective of a spec.
type procCall struct {
	Op    device.CollectiveOp
	Algo  Algo
	Proto Proto
	DType dtype.DType
	Count int // elements out of an all-reduce and a reduce-scatter, in of an all-gather
}

func (s *procSpec) config(mem device.PeerMemory) Config {
	return Config{BufferBytes: s.BufferBytes, LamportBytes: s.LamportBytes, Blocks: s.Blocks, Timeout: s.Timeout, Wire: s.Wire, Memory: mem}
}

func (s *procSpec) node() (*device.Node, error) {
	return device.NewNode(device.NodeConfig{Devices: s.N, SMs: 2, Fabric: s.Fabric, Hosts: s.Hosts})
}

// sizes returns a call's input and output element counts on n ranks.
func (pc procCall) sizes(n int) (in, out int) {
	switch pc.Op {
	case device.OpReduceScatter:
		return n * pc.Count, pc.Count
	case device.OpAllGather:
		return pc.Count, n * pc.Count
	}
	return pc.Count, pc.Count
}

// issue enqueues the call on rank rk; with wait an all-reduce returns once it is done
// (AllReduceWait).
func (pc procCall) issue(rk *Rank, s *device.Stream, in, out *device.Buffer, wait bool) error {
	switch pc.Op {
	case device.OpReduceScatter:
		return rk.ReduceScatterWith(s, pc.Algo, in, out, pc.Count)
	case device.OpAllGather:
		return rk.AllGatherWith(s, pc.Algo, in, out, pc.Count)
	}
	if wait {
		return rk.AllReduceWait(s, pc.Algo, pc.Proto, in, out, pc.Count)
	}
	return rk.AllReduceProto(s, pc.Algo, pc.Proto, in, out, pc.Count)
}

// fillSeeded writes rank r's input of call i: the same values in every process.
func fillSeeded(b *device.Buffer, i, r int) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(r)))
	vals := make([]float32, b.Len())
	for j := range vals {
		vals[j] = rng.Float32()*2 - 1
	}
	if b.DType() == dtype.F32 {
		copy(b.Float32s(), vals)
		return
	}
	vec.Narrow(b.DType(), b.Uint16s(), vals)
}

// hashOf is a digest of a buffer's bits.
func hashOf(b *device.Buffer) uint64 {
	h := fnv.New64a()
	h.Write(b.Bytes8())
	return h.Sum64()
}

// runCalls runs calls [0, upTo) of spec on the ranks ranks (one stream each, every rank's
// call issued before any waits; with spec.BackToBack every call before any waits) and returns each rank's result hashes, index = rank.
func runCalls(spec *procSpec, ranks []*Rank, upTo int) (map[int][]uint64, error) {
	streams := make([]*device.Stream, len(ranks))
	for i, rk := range ranks {
		s, err := rk.Device().NewStream("comm", 0)
		if err != nil {
			return nil, err
		}
		streams[i] = s
	}
	return runCallsOn(spec, ranks, streams, upTo)
}

// runCallsOn is runCalls on the given streams, one per rank.
func runCallsOn(spec *procSpec, ranks []*Rank, streams []*device.Stream, upTo int) (map[int][]uint64, error) {
	wait := spec.Blocking && len(ranks) == 1 // ranks on one goroutine must all issue before one waits
	hashes := map[int][]uint64{}
	var pending [][]*device.Buffer // outputs of the calls not synchronized yet, by call and rank
	for i, pc := range spec.Calls[:upTo] {
		nIn, nOut := pc.sizes(spec.N)
		outs := make([]*device.Buffer, len(ranks))
		for k, rk := range ranks {
			in, err := rk.Device().Alloc(pc.DType, nIn)
			if err != nil {
				return nil, err
			}
			if outs[k], err = rk.Device().Alloc(pc.DType, nOut); err != nil {
				return nil, err
			}
			fillSeeded(in, i, rk.Rank())
			if err := pc.issue(rk, streams[k], in, outs[k], wait); err != nil {
				return nil, fmt.Errorf("call %d %+v: rank %d: %w", i, pc, rk.Rank(), err)
			}
		}
		pending = append(pending, outs)
		if spec.BackToBack && i+1 < upTo {
			continue
		}
		for k, s := range streams {
			if err := s.Synchronize(); err != nil {
				return nil, fmt.Errorf("call %d %+v: rank %d: %w", i, pc, ranks[k].Rank(), err)
			}
		}
		for _, outs := range pending {
			for k, rk := range ranks {
				hashes[rk.Rank()] = append(hashes[rk.Rank()], hashOf(outs[k]))
			}
		}
		pending = pending[:0]
	}
	return hashes, nil
}

// runGraphCalls is runCalls with each call captured, its inputs (from mem) registered
// (RegisterGraphBuffers) and replayed spec.Replays times on new inputs; a rank's hashes are
// its replays'.
func runGraphCalls(spec *procSpec, c *Communicator, ranks []*Rank, mem device.PeerMemory) (map[int][]uint64, error) {
	hashes := map[int][]uint64{}
	for i, pc := range spec.Calls {
		nIn, nOut := pc.sizes(spec.N)
		streams := make([]*device.Stream, len(ranks))
		ins, outs := make([]*device.Buffer, len(ranks)), make([]*device.Buffer, len(ranks))
		graphs := make([]*device.Graph, len(ranks))
		for k, rk := range ranks {
			var err error
			if streams[k], err = rk.Device().NewStream("graph", 0); err != nil {
				return nil, err
			}
			if ins[k], err = mem.Alloc(rk.Device(), pc.DType, nIn); err != nil {
				return nil, err
			}
			if outs[k], err = rk.Device().Alloc(pc.DType, nOut); err != nil {
				return nil, err
			}
			if err := streams[k].BeginCapture(); err != nil {
				return nil, err
			}
			if err := pc.issue(rk, streams[k], ins[k], outs[k], false); err != nil {
				return nil, err
			}
			if graphs[k], err = streams[k].EndCapture(); err != nil {
				return nil, err
			}
		}
		if _, err := c.RegisterGraphBuffers(); err != nil {
			return nil, err
		}
		for rep := range spec.Replays {
			for k, rk := range ranks {
				fillSeeded(ins[k], 1000*i+rep, rk.Rank())
				for _, node := range graphs[k].Nodes {
					if err := streams[k].Launch(node.Kernel); err != nil {
						return nil, err
					}
				}
			}
			for k, s := range streams {
				if err := s.Synchronize(); err != nil {
					return nil, fmt.Errorf("call %d %+v replay %d: rank %d: %w", i, pc, rep, ranks[k].Rank(), err)
				}
				hashes[ranks[k].Rank()] = append(hashes[ranks[k].Rank()], hashOf(outs[k]))
			}
		}
		for k := range ranks {
			_ = ins[k].Free()
		}
	}
	return hashes, nil
}

// TestMain lets the test binary play a rank process (testutil.ChildCommand).
func TestMain(m *testing.M) {
	if role := testutil.ChildRole(); role != "" {
		if err := runRankProcess(role); err != nil {
			fmt.Fprintf(os.Stderr, "rank process (%s): %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runRankProcess plays one rank: joins the communicator through the driver, runs the
// spec's calls, sends their hashes, and closes everything when the driver says so.
func runRankProcess(role string) error {
	var spec procSpec
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	rank, err := strconv.Atoi(os.Getenv(envRank))
	if err != nil {
		return err
	}
	conn, err := ipc.Dial(os.Getenv(envSocket))
	if err != nil {
		return err
	}
	defer conn.Close()
	node, err := spec.node()
	if err != nil {
		return err
	}
	defer node.Close()
	c, err := Join(node, spec.config(nil), ipc.RankBootstrap{Conn: conn, Index: rank, World: spec.N})
	if err != nil {
		return err
	}
	if role == roleOther {
		for i := range spec.Calls {
			spec.Calls[i].Count *= 2
		}
	}
	if role == roleBench {
		return runBenchRank(&spec, c, rank, conn)
	}
	upTo := len(spec.Calls)
	if role == roleStall {
		upTo = spec.StopAt
	}
	var hashes map[int][]uint64
	if spec.Graph {
		hashes, err = runGraphCalls(&spec, c, []*Rank{c.Rank(rank)}, device.SharedMemory{})
	} else {
		hashes, err = runCalls(&spec, []*Rank{c.Rank(rank)}, upTo)
	}
	if err != nil {
		_ = conn.Send(ipc.Message{Kind: kindFailed, Body: []byte(err.Error())})
		return err
	}
	body := make([]byte, 0, 8*len(hashes[rank]))
	for _, h := range hashes[rank] {
		body = binary.LittleEndian.AppendUint64(body, h)
	}
	if err := conn.Send(ipc.Message{Kind: kindHashes, Body: body}); err != nil {
		return err
	}
	if role == roleStall {
		select {} // the driver kills or stops this process
	}
	if m, err := conn.Recv(); err != nil || m.Kind != kindClose {
		return fmt.Errorf("waiting for the driver's close: kind %d, %v", m.Kind, err)
	}
	if err := c.Close(); err != nil {
		return err
	}
	if left, err := testutil.MemfdLeft("memfd:tpslice-device"); err != nil || len(left) > 0 {
		return fmt.Errorf("after Close: %v left (%v)", left, err)
	}
	return nil
}

// procGroup is the driver's side of a group of rank processes: rank 0 lives here.
type procGroup struct {
	spec  *procSpec
	kids  *ipc.Children
	conns []*ipc.Conn // index = rank; nil for rank 0
	pids  []int       // index = rank; 0 for rank 0
	c     *Communicator
	exits chan *ipc.Exit
	ranks sync.Map // pid → rank
	comm  atomic.Pointer[Communicator]
	// expectExit is set before the driver kills a rank, so that its exit is not a failure.
	expectExit atomic.Bool
	unexpected atomic.Pointer[ipc.Exit]
}

// startGroup starts ranks 1..n-1 in the given roles (roleRank when absent) and joins as
// rank 0. A rank process that dies is marked failed in shared memory, as a driver does.
func startGroup(t testing.TB, spec *procSpec, roles map[int]string) *procGroup {
	t.Helper()
	g := &procGroup{spec: spec, conns: make([]*ipc.Conn, spec.N), pids: make([]int, spec.N), exits: make(chan *ipc.Exit, spec.N)}
	kids, err := ipc.NewChildren(func(e *ipc.Exit) {
		if r, ok := g.ranks.Load(e.Pid); ok {
			if c := g.comm.Load(); c != nil && !e.State.Success() {
				_ = c.MarkExited(r.(int))
			}
		}
		if !e.State.Success() && !g.expectExit.Load() {
			g.unexpected.CompareAndSwap(nil, e)
		}
		g.exits <- e
	})
	require.NoError(t, err)
	g.kids = kids
	t.Cleanup(func() { _ = kids.Close() })
	ln, err := ipc.Listen(kids.Has)
	require.NoError(t, err)
	defer ln.Close()
	js, err := json.Marshal(spec)
	require.NoError(t, err)
	for r := 1; r < spec.N; r++ {
		role := roles[r]
		if role == "" {
			role = roleRank
		}
		pid, err := kids.Start(fmt.Sprintf("rank %d", r), testutil.ChildCommand(role,
			envSocket+"="+ln.Path(), envRank+"="+strconv.Itoa(r), envSpec+"="+string(js)))
		require.NoError(t, err)
		g.ranks.Store(pid, r)
		conn, err := ln.Accept()
		require.NoError(t, err)
		require.Equal(t, pid, conn.Peer().Pid)
		g.conns[r], g.pids[r] = conn, pid
		t.Cleanup(func() { conn.Close() })
	}
	node, err := spec.node()
	require.NoError(t, err)
	t.Cleanup(func() { _ = node.Close() })
	c, err := Join(node, spec.config(nil), ipc.DriverBootstrap{Conns: g.conns})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() }) // a failed test's too: the next one checks for mappings
	g.c = c
	g.comm.Store(c)
	return g
}

// results receives every rank process's hashes.
func (g *procGroup) results(t *testing.T) map[int][]uint64 {
	t.Helper()
	got := map[int][]uint64{}
	for r := 1; r < g.spec.N; r++ {
		m, err := g.conns[r].Recv()
		require.NoError(t, err, "rank %d's results", r)
		require.NotEqual(t, uint32(kindFailed), m.Kind, "rank %d: %s", r, m.Body)
		require.EqualValues(t, kindHashes, m.Kind)
		for b := m.Body; len(b) >= 8; b = b[8:] {
			got[r] = append(got[r], binary.LittleEndian.Uint64(b))
		}
	}
	return got
}

// finish closes the communicator, tells the rank processes to close, and checks that each
// exited well and that nothing is left: no memfd mapping or descriptor, no zombie.
func (g *procGroup) finish(t *testing.T) {
	t.Helper()
	for r := 1; r < g.spec.N; r++ {
		require.NoError(t, g.conns[r].Send(ipc.Message{Kind: kindClose}))
	}
	g.awaitExits(t, g.spec.N-1)
	require.Nil(t, g.unexpected.Load(), "a rank process failed")
	require.NoError(t, g.c.Close())
	g.requireClean(t)
}

// finishAfterFailure waits for rank 1's process, which a test made fail or killed, to exit,
// closes the communicator and checks that nothing is left.
func (g *procGroup) finishAfterFailure(t *testing.T) {
	t.Helper()
	g.awaitExits(t, 1)
	require.NoError(t, g.c.Close())
	g.requireClean(t)
}

// requireFailureReport reads rank r's report of its failure and checks that it says what.
func (g *procGroup) requireFailureReport(t *testing.T, r int, what string) {
	t.Helper()
	m, err := g.conns[r].Recv()
	require.NoError(t, err)
	require.EqualValues(t, kindFailed, m.Kind)
	require.Contains(t, string(m.Body), what)
}

// awaitExits waits for k exits.
func (g *procGroup) awaitExits(t *testing.T, k int) {
	t.Helper()
	for range k {
		select {
		case <-g.exits:
		case <-time.After(30 * time.Second):
			t.Fatal("a rank process's exit was not reported")
		}
	}
}

// requireClean checks that no rank process is left and no memfd is mapped or open here.
func (g *procGroup) requireClean(t *testing.T) {
	t.Helper()
	for r, pid := range g.pids[1:] {
		require.True(t, testutil.Reaped(pid), "rank %d (pid %d) is still in the process table", r+1, pid)
	}
	left, err := testutil.MemfdLeft("memfd:tpslice-device")
	require.NoError(t, err)
	require.Empty(t, left)
}

// inProcessHashes runs spec's calls with every rank in this process: the reference.
func inProcessHashes(t *testing.T, spec *procSpec) map[int][]uint64 {
	t.Helper()
	node, err := spec.node()
	require.NoError(t, err)
	defer node.Close()
	c, err := New(node, spec.config(nil))
	require.NoError(t, err)
	defer c.Close()
	ranks := make([]*Rank, spec.N)
	for r := range ranks {
		ranks[r] = c.Rank(r)
	}
	want, err := runCalls(spec, ranks, len(spec.Calls))
	require.NoError(t, err)
	return want
}

// runProcessGroup runs spec with one process per rank and requires every rank's results
// to be bitwise the in-process ones.
func runProcessGroup(t *testing.T, spec *procSpec) {
	t.Helper()
	runProcessGroupOn(t, spec, nil)
}

// runProcessGroupOn is runProcessGroup with rank 0 on its stream made by stream (on its
// device), or a new one where stream is nil.
func runProcessGroupOn(t *testing.T, spec *procSpec, stream func(*device.Device) *device.Stream) {
	t.Helper()
	want := inProcessHashes(t, spec)
	g := startGroup(t, spec, nil)
	rk := g.c.Rank(0)
	var s *device.Stream
	if stream != nil {
		s = stream(rk.Device())
	} else {
		var err error
		s, err = rk.Device().NewStream("comm", 0)
		require.NoError(t, err)
	}
	mine, err := runCallsOn(spec, []*Rank{rk}, []*device.Stream{s}, len(spec.Calls))
	require.NoError(t, err)
	got := g.results(t)
	got[0] = mine[0]
	for r := range spec.N {
		require.Len(t, got[r], len(spec.Calls), "rank %d", r)
		for i, pc := range spec.Calls {
			require.Equal(t, want[r][i], got[r][i], "rank %d call %d %+v: the process result differs from the in-process one", r, i, pc)
		}
	}
	g.finish(t)
}

// processCalls lists the calls a process test runs on a node: every algorithm the
// communicator offers there under every protocol it takes, all-reduce in f32 and bf16, and
// both reduce-scatter and all-gather algorithms, at sizes that fit a chunk and that do not.
func processCalls(c *Communicator, wire Wire, counts []int) []procCall {
	var calls []procCall
	for _, a := range Algos {
		if !c.Available(a) || wire != WireExact && !wire.Supports(a) {
			continue
		}
		protos := []Proto{ProtoAuto}
		if TakesProto(a) {
			protos = []Proto{Simple, LL, LL128}
		}
		for _, p := range protos {
			for _, t := range []dtype.DType{dtype.F32, dtype.BF16} {
				for _, n := range counts {
					calls = append(calls, procCall{Op: device.OpAllReduce, Algo: a, Proto: p, DType: t, Count: n})
				}
			}
		}
	}
	if wire != WireExact {
		return calls
	}
	for _, op := range []device.CollectiveOp{device.OpReduceScatter, device.OpAllGather} {
		for _, a := range []Algo{OneShot, Ring} {
			for _, n := range counts {
				calls = append(calls, procCall{Op: op, Algo: a, DType: dtype.F32, Count: n})
			}
		}
	}
	return calls
}

// newProcSpec is a small spec: small buffers, so that the larger sizes run in chunks.
func newProcSpec(t *testing.T, n, hosts int, fabric device.Fabric, wire Wire, counts []int) *procSpec {
	t.Helper()
	spec := &procSpec{N: n, Hosts: hosts, Fabric: fabric, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Wire: wire, Timeout: 20 * time.Second}
	node, err := spec.node()
	require.NoError(t, err)
	defer node.Close()
	c, err := New(node, spec.config(nil))
	require.NoError(t, err)
	defer c.Close()
	spec.Calls = processCalls(c, wire, counts)
	return spec
}
