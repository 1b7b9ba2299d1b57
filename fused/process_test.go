//go:build linux

package fused

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/testutil"
)

// The test here runs the fused all-reduce + residual + RMSNorm with ranks 1..n-1 as real
// processes (the test binary in a rank's role, TestMain) and the test process as rank 0 and
// the driver, against the same ranks as goroutines.

const (
	envSocket  = "TPSLICE_TEST_SOCKET"
	envRank    = "TPSLICE_TEST_RANK"
	envRanks   = "TPSLICE_TEST_RANKS"
	kindHashes = 16 // a rank's result hashes, one uint64 per variant and shape
	kindClose  = 17 // the driver: every rank finished; close and exit
)

// processShapes are the shapes run per variant: rows in one chunk and in several (the
// communicator's buffers hold 4 KiB).
var processShapes = []Shape{{Tokens: 3, Hidden: 64, Eps: 1e-5}, {Tokens: 40, Hidden: 96, Eps: 1e-5}}

func processConfig(mem device.PeerMemory) comm.Config {
	return comm.Config{BufferBytes: 4096, LamportBytes: 1024, Blocks: 2, Timeout: 20 * time.Second, Memory: mem}
}

func processNode(n int) (*device.Node, error) {
	return device.NewNode(device.NodeConfig{Devices: n, SMs: 2, Fabric: device.NVSwitch})
}

// runFused runs every variant on every shape on the given ranks, the inputs seeded by
// (variant, shape, rank), and returns each rank's hashes of the residual and the output.
func runFused(ranks []*comm.Rank) (map[int][]uint64, error) {
	hashes := map[int][]uint64{}
	streams := make([]*device.Stream, len(ranks))
	for k, rk := range ranks {
		s, err := rk.Device().NewStream("fused", 0)
		if err != nil {
			return nil, err
		}
		streams[k] = s
	}
	for _, v := range Variants {
		for si, sh := range processShapes {
			type bufs struct{ partial, residual, weight, out *device.Buffer }
			all := make([]bufs, len(ranks))
			for k, rk := range ranks {
				rng := rand.New(rand.NewPCG(uint64(v)*10+uint64(si), uint64(rk.Rank())))
				b := &all[k]
				for _, p := range []**device.Buffer{&b.partial, &b.residual, &b.out} {
					var err error
					if *p, err = rk.Device().Alloc(dtype.F32, sh.Tokens*sh.Hidden); err != nil {
						return nil, err
					}
				}
				var err error
				if b.weight, err = rk.Device().Alloc(dtype.F32, sh.Hidden); err != nil {
					return nil, err
				}
				for _, x := range [][]float32{b.partial.Float32s(), b.residual.Float32s(), b.weight.Float32s()} {
					for i := range x {
						x[i] = rng.Float32()*2 - 1
					}
				}
				if err := AllReduceAddRMSNorm(rk, streams[k], v, b.partial, b.residual, b.weight, b.out, sh); err != nil {
					return nil, fmt.Errorf("%v %+v: rank %d: %w", v, sh, rk.Rank(), err)
				}
			}
			for k, s := range streams {
				if err := s.Synchronize(); err != nil {
					return nil, fmt.Errorf("%v %+v: rank %d: %w", v, sh, ranks[k].Rank(), err)
				}
				h := fnv.New64a()
				h.Write(all[k].residual.Bytes8())
				h.Write(all[k].out.Bytes8())
				hashes[ranks[k].Rank()] = append(hashes[ranks[k].Rank()], h.Sum64())
			}
		}
	}
	return hashes, nil
}

// TestMain lets the test binary play a rank process (testutil.ChildCommand).
func TestMain(m *testing.M) {
	if testutil.ChildRole() != "" {
		if err := runRankProcess(); err != nil {
			fmt.Fprintf(os.Stderr, "rank process: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runRankProcess() error {
	rank, err1 := strconv.Atoi(os.Getenv(envRank))
	n, err2 := strconv.Atoi(os.Getenv(envRanks))
	if err1 != nil || err2 != nil {
		return fmt.Errorf("rank %q of %q", os.Getenv(envRank), os.Getenv(envRanks))
	}
	conn, err := ipc.Dial(os.Getenv(envSocket))
	if err != nil {
		return err
	}
	defer conn.Close()
	node, err := processNode(n)
	if err != nil {
		return err
	}
	defer node.Close()
	c, err := comm.Join(node, processConfig(nil), ipc.RankBootstrap{Conn: conn, Index: rank, World: n})
	if err != nil {
		return err
	}
	hashes, err := runFused([]*comm.Rank{c.Rank(rank)})
	if err != nil {
		return err
	}
	var body []byte
	for _, h := range hashes[rank] {
		body = binary.LittleEndian.AppendUint64(body, h)
	}
	if err := conn.Send(ipc.Message{Kind: kindHashes, Body: body}); err != nil {
		return err
	}
	if m, err := conn.Recv(); err != nil || m.Kind != kindClose {
		return fmt.Errorf("waiting for the driver's close: kind %d, %v", m.Kind, err)
	}
	return c.Close()
}

// TestProcessFusedVariants runs every fused variant with one process per rank at 2, 4 and 8
// ranks: the residual and the normalized output are bitwise the in-process ones.
func TestProcessFusedVariants(t *testing.T) {
	for _, n := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) {
			node, err := processNode(n)
			require.NoError(t, err)
			defer node.Close()
			ref, err := comm.New(node, processConfig(nil))
			require.NoError(t, err)
			ranks := make([]*comm.Rank, n)
			for r := range ranks {
				ranks[r] = ref.Rank(r)
			}
			want, err := runFused(ranks)
			require.NoError(t, err)
			require.NoError(t, ref.Close())

			exits := make(chan *ipc.Exit, n)
			kids, err := ipc.NewChildren(func(e *ipc.Exit) { exits <- e })
			require.NoError(t, err)
			defer kids.Close()
			ln, err := ipc.Listen(kids.Has)
			require.NoError(t, err)
			defer ln.Close()
			conns, pids := make([]*ipc.Conn, n), make([]int, n)
			for r := 1; r < n; r++ {
				pids[r], err = kids.Start(fmt.Sprintf("rank %d", r), testutil.ChildCommand("rank",
					envSocket+"="+ln.Path(), envRank+"="+strconv.Itoa(r), envRanks+"="+strconv.Itoa(n)))
				require.NoError(t, err)
				conns[r], err = ln.Accept()
				require.NoError(t, err)
				defer conns[r].Close()
			}
			pnode, err := processNode(n)
			require.NoError(t, err)
			defer pnode.Close()
			c, err := comm.Join(pnode, processConfig(nil), ipc.DriverBootstrap{Conns: conns})
			require.NoError(t, err)
			defer c.Close()
			got, err := runFused([]*comm.Rank{c.Rank(0)})
			require.NoError(t, err)
			for r := 1; r < n; r++ {
				m, err := conns[r].Recv()
				require.NoError(t, err, "rank %d's results", r)
				require.EqualValues(t, kindHashes, m.Kind)
				for b := m.Body; len(b) >= 8; b = b[8:] {
					got[r] = append(got[r], binary.LittleEndian.Uint64(b))
				}
			}
			for r := range n {
				require.Equal(t, want[r], got[r], "rank %d: a variant's bits differ across processes (variants × shapes in order)", r)
			}
			for r := 1; r < n; r++ {
				require.NoError(t, conns[r].Send(ipc.Message{Kind: kindClose}))
			}
			for range n - 1 {
				select {
				case e := <-exits:
					require.True(t, e.State.Success(), "%v", e)
				case <-time.After(30 * time.Second):
					t.Fatal("a rank process's exit was not reported")
				}
			}
			require.NoError(t, c.Close())
			for r := 1; r < n; r++ {
				require.True(t, testutil.Reaped(pids[r]), "rank %d is still in the process table", r)
			}
			left, err := testutil.MemfdLeft("memfd:tpslice-device")
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}
