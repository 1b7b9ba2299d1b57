//go:build linux

package models

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/tp"
)

// joinGather is an in-process all-gather of handles among the goroutines that play the
// ranks of worker processes; joinBoot is one rank's comm.Bootstrap over it. As a socket
// would, it gives every receiver descriptors of its own (dups), which Join closes.
type joinGather struct {
	mu      sync.Mutex
	sent    [][][]device.IPCHandle // [sender][receiver]
	waiting int
	all     chan struct{}
}

type joinBoot struct {
	g    *joinGather
	rank int
}

func (b joinBoot) Rank() int { return b.rank }
func (b joinBoot) Size() int { return len(b.g.sent) }
func (b joinBoot) AllGather(mine []device.IPCHandle) ([][]device.IPCHandle, error) {
	copies := make([][]device.IPCHandle, b.Size())
	for to := range copies {
		for _, h := range mine {
			fd, err := unix.Dup(int(h.File.Fd()))
			if err != nil {
				return nil, err
			}
			h.File = os.NewFile(uintptr(fd), h.File.Name())
			copies[to] = append(copies[to], h)
		}
	}
	b.g.mu.Lock()
	b.g.sent[b.rank] = copies
	b.g.waiting--
	if b.g.waiting == 0 {
		close(b.g.all)
	}
	b.g.mu.Unlock()
	<-b.g.all
	out := make([][]device.IPCHandle, b.Size())
	for from := range out {
		out[from] = b.g.sent[from][b.rank]
	}
	return out, nil
}

// joinRanks builds world models, each holding only its own rank of a group joined as a
// worker process joins it (tp.JoinGroup), the ranks being goroutines here.
func joinRanks(t *testing.T, world int, cfg Config) []*Llama {
	t.Helper()
	src, err := NewDummy(cfg, tpTestSeed)
	require.NoError(t, err)
	gather := &joinGather{sent: make([][][]device.IPCHandle, world), waiting: world, all: make(chan struct{})}
	models := make([]*Llama, world)
	groups := make([]*tp.Group, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Go(func() {
			groups[r], errs[r] = tp.JoinGroup(tp.GroupConfig{World: world, SMs: 2}, joinBoot{g: gather, rank: r})
			if errs[r] == nil {
				models[r], errs[r] = NewLlama(groups[r], cfg, src, tpTestOptions)
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for r := range world {
			if models[r] != nil {
				models[r].Close()
			}
			if groups[r] != nil {
				_ = groups[r].Close()
			}
		}
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return models
}

// forwardJoined runs st on every joined rank at once and assembles what each rank sends a
// driver (RankRows) into the step's result.
func forwardJoined(t *testing.T, ranks []*Llama, st Step) Gathered {
	t.Helper()
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for r, m := range ranks {
		wg.Go(func() { errs[r] = m.Forward(st) })
	}
	wg.Wait()
	rows := make([][]float32, len(ranks))
	for r, m := range ranks {
		require.NoError(t, errs[r], "rank %d", r)
		rows[r] = m.RankRows(st, r)
	}
	p := ranks[0].Plan()
	g, err := NewGathered(st, p.VocabPerRank, ranks[0].Config().Vocab, rows)
	require.NoError(t, err)
	return g
}

// TestLlamaJoinedRanks: models that each hold one rank of a joined group (the ranks of
// worker processes) load only their own shard, and the rows each rank sends, assembled,
// give bitwise the logits, log-sum-exps and candidates of every rank in one process. tiny-odd
// pads the vocabulary on the last rank.
func TestLlamaJoinedRanks(t *testing.T) {
	for _, preset := range []string{"tiny", "tiny-odd"} {
		for _, world := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/tp=%d", preset, world), func(t *testing.T) {
				cfg := tpPreset(t, preset)
				src, err := NewDummy(cfg, tpTestSeed)
				require.NoError(t, err)
				want := newTestLlama(t, world, cfg, src, tpTestOptions)
				ranks := joinRanks(t, world, cfg)
				for r, m := range ranks {
					bytes := make([]int64, world)
					bytes[r] = want.WeightBytes()[r]
					require.Equal(t, bytes, m.WeightBytes(), "rank %d holds its own shard, and only it", r)
				}

				ids := tpPromptIDs(20, cfg.Vocab)
				prefill := oneSequence(want, ids, 0, 0)
				prefill.Logprobs = true
				require.NoError(t, want.Forward(prefill))
				got := forwardJoined(t, ranks, prefill)
				require.Equal(t, want.Logits(prefill), got.Logits())
				require.Equal(t, want.LogSumExp(prefill), got.LogSumExp())

				decode := oneSequence(want, []int32{tpArgmax(got.Logits()[0])}, len(ids), 3)
				require.NoError(t, want.Forward(decode))
				got = forwardJoined(t, ranks, decode)
				require.Equal(t, want.Candidates(decode), got.Candidates())
			})
		}
	}
}

// TestNewGatheredRejects: a rank whose rows do not fit the step is named.
func TestNewGatheredRejects(t *testing.T) {
	st := Step{IDs: []int32{1}, Sample: []int{0}, Candidates: 2}
	_, err := NewGathered(st, 10, 20, [][]float32{make([]float32, 4), make([]float32, 3)})
	require.ErrorContains(t, err, "rank 1 sent 3 floats for 1 sampled tokens of 4 floats each")
}
