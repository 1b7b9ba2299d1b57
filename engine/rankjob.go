//go:build linux

package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/executor"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/stepwire"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/tp"
)

// RankJobName is the executor job of a worker process that runs one rank of the engine's
// model (RankJob): the name the CLI registers it under.
const RankJobName = "engine-rank"

// The protocol between launchRanks and RankJob over each worker's connection (kinds from
// 48: the executor's handshake uses 16-18, allreduce-bench's job 32-35).
const (
	kindRankSetup  uint32 = 48 + iota // driver: rankSetup; worker: rankReady
	kindRankFailed                    // worker: its error, as text
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
	Overlap                    bool
	CollectiveTimeout          time.Duration
}

func newRankSetup(c Config) rankSetup {
	return rankSetup{Model: c.Model, WeightDType: c.WeightDType, KVDType: c.KVDType, Seed: c.Seed,
		MaxBatchTokens: c.MaxBatchTokens, MaxRunning: c.MaxRunning, KVBlocks: c.KVBlocks, SMs: c.SMs, CommSMs: c.CommSMs,
		Fused: c.Fused, Algo: c.Algo, AllReduceWire: c.AllReduceWire, Fabric: c.Fabric, Overlap: c.Overlap,
		CollectiveTimeout: c.CollectiveTimeout}
}

// config is the Config of one rank of world.
func (s rankSetup) config(world int) Config {
	return Config{Model: s.Model, TP: world, WeightDType: s.WeightDType, KVDType: s.KVDType, Seed: s.Seed,
		MaxBatchTokens: s.MaxBatchTokens, MaxRunning: s.MaxRunning, KVBlocks: s.KVBlocks, SMs: s.SMs, CommSMs: s.CommSMs,
		Fused: s.Fused, Algo: s.Algo, AllReduceWire: s.AllReduceWire, Fabric: s.Fabric, Overlap: s.Overlap,
		CollectiveTimeout: s.CollectiveTimeout}
}

// rankReady is a worker's answer once its shard is loaded.
type rankReady struct {
	VocabPerRank int
	WeightBytes  int64
	LoadNotes    []string
}

// RankJob is a worker process's rank of the engine's model (vLLM's Worker): it loads the
// model the driver names, only its own rank's shard, on its rank of a group joined
// through the driver (tp.JoinGroup), then answers every step from the ring with its rows
// of what the step gathered (models.Llama.RankRows) until the driver hangs up. A step that
// fails is answered with its error; an error before the steps is sent to the driver too.
func RankJob(w *executor.Worker) error {
	err := runRank(w)
	select {
	case <-w.Done():
		return nil // the driver hung up: the ordinary end
	default:
	}
	if err != nil {
		_ = w.Conn().Send(ipc.Message{Kind: kindRankFailed, Body: []byte(err.Error())})
	}
	return err
}

func runRank(w *executor.Worker) error {
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
	ready := rankReady{VocabPerRank: m.Plan().VocabPerRank, WeightBytes: m.WeightBytes()[rank], LoadNotes: m.LoadNotes()}
	if err := ipc.SendJSON(conn, kindRankSetup, ready); err != nil {
		return err
	}
	steps := w.Steps()
	for {
		step, err := steps.Next()
		if err != nil {
			return err
		}
		reply := stepwire.Reply{Number: step.Number}
		if err := m.Forward(step.Forward); err != nil {
			reply.Err = err.Error()
		} else {
			reply.Rows = m.RankRows(step.Forward, rank)
		}
		if err := steps.Reply(reply); err != nil {
			return errors.Join(err, errors.New(reply.Err))
		}
	}
}
