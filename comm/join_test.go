//go:build linux

package comm

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// chanGather is an in-process all-gather of handles among size goroutines.
type chanGather struct {
	mu   sync.Mutex
	all  [][]device.IPCHandle
	left int
	done chan struct{}
}

func newChanGather(size int) *chanGather {
	return &chanGather{all: make([][]device.IPCHandle, size), left: size, done: make(chan struct{})}
}

// chanBoot is one rank's Bootstrap over a chanGather.
type chanBoot struct {
	g    *chanGather
	rank int
}

func (b chanBoot) Rank() int { return b.rank }
func (b chanBoot) Size() int { return len(b.g.all) }
func (b chanBoot) AllGather(mine []device.IPCHandle) ([][]device.IPCHandle, error) {
	b.g.mu.Lock()
	b.g.all[b.rank] = mine
	if b.g.left--; b.g.left == 0 {
		close(b.g.done)
	}
	b.g.mu.Unlock()
	<-b.g.done
	return b.g.all, nil
}

// The tests here join ranks that are goroutines, through an in-process bootstrap: Join
// does not need processes. (The helpers they share with process_test.go are Linux's.)

// TestJoinConfigMismatch: ranks that join with different buffer sizes get an error that
// names the buffer and both sizes, not views that kernels would index out of range.
func TestJoinConfigMismatch(t *testing.T) {
	node, err := device.NewNode(device.NodeConfig{Devices: 2, SMs: 1})
	require.NoError(t, err)
	defer node.Close()
	g := newChanGather(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			cfg := Config{BufferBytes: 4096 * (r + 1), Memory: device.InProcessMemory{}}
			c, err := Join(node, cfg, chanBoot{g: g, rank: r})
			if err == nil {
				_ = c.Close()
			}
			errs[r] = err
		})
	}
	wg.Wait()
	// The first to open fails on the sizes; the other may find the peer's buffers freed.
	require.Error(t, errs[0])
	require.Error(t, errs[1])
	msgs := errs[0].Error() + "\n" + errs[1].Error()
	require.Regexp(t, `comm: rank (1's staging buffer holds 8192 bytes, rank 0's 4096|0's staging buffer holds 4096 bytes, rank 1's 8192): the ranks were configured differently`, msgs)
}

// TestJoinInProcess: ranks that each join with an in-process bootstrap, as goroutines,
// all-reduce with every algorithm and get New's bits.
func TestJoinInProcess(t *testing.T) {
	const n, count = 4, 1000
	spec := &procSpec{N: n, Fabric: device.NVSwitch, BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second}
	for _, a := range Algos {
		if a != TwoLevel {
			spec.Calls = append(spec.Calls, procCall{Op: device.OpAllReduce, Algo: a, DType: dtype.F32, Count: count})
		}
	}
	want := inProcessHashes(t, spec)
	node, err := spec.node()
	require.NoError(t, err)
	defer node.Close()
	g := newChanGather(n)
	got := make([]map[int][]uint64, n)
	errs := make([]error, n)
	comms := make([]*Communicator, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			if comms[r], errs[r] = Join(node, spec.config(device.InProcessMemory{}), chanBoot{g: g, rank: r}); errs[r] == nil {
				got[r], errs[r] = runCalls(spec, []*Rank{comms[r].Rank(r)}, len(spec.Calls))
			}
		})
	}
	wg.Wait()
	for _, c := range comms { // once every rank is done: a rank that closes fails its peers
		if c != nil {
			require.NoError(t, c.Close())
		}
	}
	for r := range n {
		require.NoError(t, errs[r], "rank %d", r)
		require.Equal(t, want[r], got[r][r], "rank %d", r)
	}
}
