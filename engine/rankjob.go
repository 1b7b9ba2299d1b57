//go:build linux

package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/executor"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/stepwire"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/tp"
)

// RankJobName is the executor job of a worker process that runs one rank of the engine's
// model (RankJob): the name the CLI registers it under.
const RankJobName = "engine-rank"

// The protocol between launchRanks and RankJob over each worker's connection (kinds from
// 48: the executor's handshake uses 16-18, allreduce-bench's job 32-35).
const (
	kindRankSetup       uint32 = 48 + iota // driver: rankSetup; worker: rankReady
	kindRankFailed                         // worker: its error, as text
	kindProbeStart                         // driver: probeStart; worker: {} once installed
	kindProbeStop                          // driver: probeStop; worker: the probe's answer
	kindCollectiveStats                    // driver: {}; worker: its rank's []comm.CollectiveStat
)

// rankSetup is what a worker needs of the driver's Config to load the same model and run
// the same steps: the fields that shape the weights, the KV cache, the communicator and
// the kernels.
type rankSetup struct {
	Model                      string
	WeightDType, KVDType       dtype.DType
	Seed                       uint64
	MaxBatchTokens, MaxRunning int
	KVBlocks, SMs, CommSMs     int
	Fused                      fused.Variant
	Algo                       comm.Algo
	AllReduceWire              comm.Wire
	Fabric                     device.Fabric
	Overlap, Eager, BF16Dot    bool
	CollectiveTimeout          time.Duration
	// CPUs are every rank's CPUs (topo.Placement.CPUs; nil: none pinned): a worker pins
	// its rank's SM workers and loading to its own, as the ranks of one process are.
	CPUs [][]int
}

func newRankSetup(c Config) rankSetup {
	return rankSetup{Model: c.Model, WeightDType: c.WeightDType, KVDType: c.KVDType, Seed: c.Seed,
		MaxBatchTokens: c.MaxBatchTokens, MaxRunning: c.MaxRunning, KVBlocks: c.KVBlocks, SMs: c.SMs, CommSMs: c.CommSMs,
		Fused: c.Fused, Algo: c.Algo, AllReduceWire: c.AllReduceWire, Fabric: c.Fabric, Overlap: c.Overlap,
		Eager: c.Eager, BF16Dot: c.BF16Dot, CollectiveTimeout: c.CollectiveTimeout}
}

// config is the Config of one rank of world.
func (s rankSetup) config(world int) Config {
	return Config{Model: s.Model, TP: world, WeightDType: s.WeightDType, KVDType: s.KVDType, Seed: s.Seed,
		MaxBatchTokens: s.MaxBatchTokens, MaxRunning: s.MaxRunning, KVBlocks: s.KVBlocks, SMs: s.SMs, CommSMs: s.CommSMs,
		Fused: s.Fused, Algo: s.Algo, AllReduceWire: s.AllReduceWire, Fabric: s.Fabric, Overlap: s.Overlap,
		Eager: s.Eager, BF16Dot: s.BF16Dot, CollectiveTimeout: s.CollectiveTimeout}
}

// rankReady is a worker's answer once its shard is loaded and its graphs captured.
type rankReady struct {
	VocabPerRank int
	WeightBytes  int64
	LoadNotes    []string
	Graphs       Graphs
}

// RankJob is a worker process's rank of the engine's model (vLLM's Worker): it loads the
// model the driver names, only its own rank's shard, on its rank of a group joined
// through the driver (tp.JoinGroup), then answers every step from the ring with its rows
// of what the step gathered (models.Llama.RankRows) until the driver hangs up. A step that
// fails is answered with its error; an error before the steps is sent to the driver too.
// It runs no probes (NewRankJob).
func RankJob(w *executor.Worker) error { return NewRankJob(nil)(w) }

// NewRankJob is RankJob whose worker also runs, while the driver asks (Engine.ProbeRank),
// the probes named in probes on its rank.
func NewRankJob(probes RankProbes) executor.Job {
	return func(w *executor.Worker) error {
		var sends sync.Mutex
		err := runRank(w, probes, &sends)
		select {
		case <-w.Done():
			return nil // the driver hung up: the ordinary end
		default:
		}
		if err != nil {
			sends.Lock()
			_ = w.Conn().Send(ipc.Message{Kind: kindRankFailed, Body: []byte(err.Error())})
			sends.Unlock()
		}
		return err
	}
}

func runRank(w *executor.Worker, probes RankProbes, sends *sync.Mutex) error {
	conn, rank := w.Conn(), w.Rank()
	var setup rankSetup
	if err := ipc.RecvJSON(conn, kindRankSetup, kindRankFailed, &setup); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	cfg := setup.config(w.Size())
	mcfg, src, _, _, err := open(cfg)
	if err != nil {
		return err
	}
	defer src.Close()
	gc := groupConfig(cfg)
	gc.CPUs = setup.CPUs
	if gc.Comm.Fault, err = comm.FaultFromEnv(); err != nil {
		return err
	}
	g, err := tp.JoinGroup(gc, ipc.RankBootstrap{Conn: conn, Index: rank, World: w.Size()})
	if err != nil {
		return err
	}
	defer g.Close()
	m, err := models.NewLlama(g, mcfg, src, llamaOptions(cfg, nil))
	if err != nil {
		return err
	}
	defer m.Close()
	rk := &rankModel{m: m, rank: rank, pad: int32(cfg.KVBlocks)}
	ready := rankReady{VocabPerRank: m.Plan().VocabPerRank, WeightBytes: m.WeightBytes()[rank], LoadNotes: m.LoadNotes()}
	if !cfg.Eager {
		if rk.graphs, ready.Graphs, err = captureGraphs(m, cfg.MaxRunning); err != nil {
			return err
		}
	}
	if err := ipc.SendJSON(conn, kindRankSetup, ready); err != nil {
		return err
	}
	go (&probeServer{conn: conn, sends: sends, g: g, rank: rank, probes: probes}).serve()
	steps := w.Steps()
	for {
		step, err := steps.Next()
		if err != nil {
			return err
		}
		reply := rk.run(step)
		if err := steps.Reply(reply); err != nil {
			return errors.Join(err, errors.New(reply.Err))
		}
	}
}

// rankModel is a worker's rank of the model and its decode graphs.
type rankModel struct {
	m      *models.Llama
	rank   int
	pad    int32 // the KV block that padding rows write (Engine.padBlock)
	graphs map[int][2]*models.DecodeGraph
}

// run runs a step, from the graph of its bucket where the driver names one, and returns
// the rank's reply: its rows of what the step gathered, or its error.
func (rk *rankModel) run(step stepwire.Step) stepwire.Reply {
	reply := stepwire.Reply{Number: step.Number}
	st := step.Forward
	var err error
	if step.Bucket == 0 {
		if err = rk.m.Forward(st); err == nil {
			reply.Rows = rk.m.RankRows(st, rk.rank)
		}
	} else if reply.Rows, err = rk.replay(step.Bucket, st); err == nil {
		reply.Bucket = step.Bucket // what the rank did: the driver counts it as a replay
	}
	if err != nil {
		reply.Err = err.Error()
	}
	return reply
}

// replay runs st, a decode step of one token a sequence, by replaying the rank's graph of
// bucket (greedy or full logits, as st's candidates say) and returns the rank's rows of
// its sampled tokens.
func (rk *rankModel) replay(bucket int, st models.Step) ([]float32, error) {
	pair, ok := rk.graphs[bucket]
	if !ok || st.Candidates > 1 || len(st.IDs) > bucket {
		return nil, fmt.Errorf("no decode graph of bucket %d for a step of %d tokens and %d candidates", bucket, len(st.IDs), st.Candidates)
	}
	g := pair[st.Candidates]
	for i := range bucket {
		if i >= len(st.IDs) {
			setGraphPadding(g, i, rk.pad)
			continue
		}
		if len(st.Batch.Tables[i]) > len(g.Step.Batch.Tables[i]) {
			return nil, fmt.Errorf("decode graph of bucket %d: sequence %d's table of %d blocks exceeds the graph's %d", bucket, i, len(st.Batch.Tables[i]), len(g.Step.Batch.Tables[i]))
		}
		var sp layers.RowSampler
		if st.Samplers != nil {
			sp = st.Samplers[i]
		}
		setGraphRow(g, i, st.IDs[i], st.Batch.Pos[i], st.Batch.Tables[i], sp)
	}
	if err := g.Replay(); err != nil {
		return nil, err
	}
	rows := rk.m.RankRows(g.Step, rk.rank) // the bucket's rows: the step's are the first
	return rows[:len(rows)/bucket*len(st.IDs)], nil
}
