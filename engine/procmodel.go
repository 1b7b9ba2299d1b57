//go:build linux

package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/executor"
	"github.com/tpslice/tpslice/internal/ipc"
	"github.com/tpslice/tpslice/internal/stepwire"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
	"github.com/tpslice/tpslice/tp"
)

// procModel is the driver's Model when every rank runs in a worker process of its own
// (Config.Processes), as vLLM's MultiprocExecutor stands for its workers: Forward
// broadcasts the step through the executor's shared-memory ring, every worker runs its
// rank (RankJob) and answers with its rows of what the step gathered, and the readers
// (Candidates, Logits, …) read them assembled in rank order, so that the scheduler and
// Pick run as they do in one process. A decode step of a captured bucket is replayed by
// every worker from its own graph. A worker that dies fails the step with its rank, pid,
// exit status and last collective, its peers' waits ending at once (comm.DeathWatch); one
// that stops answering (SIGSTOP, a hang) fails it a collective
// deadline after its peers answered (theirs time out first: about twice the deadline in
// all), naming its rank and pid, and is killed. With no peer to answer (TP 1), a worker
// stopped or blocked, using no CPU time, is named with its /proc state and killed two
// collective deadlines after it went quiet (executor.Config.StallAfter).
type procModel struct {
	e      *executor.Executor
	cfg    models.Config
	opt    models.LlamaOptions
	vpr    int     // vocabulary rows per rank (tp.Plan.VocabPerRank)
	bytes  []int64 // weight bytes by rank
	notes  []string
	number uint64 // the last step sent
	last   models.Gathered
	// buckets are the batch sizes of the decode graphs every worker captured (none when
	// eager); replays counts, per bucket, the steps every worker replayed its graph for.
	buckets []int
	replays map[int]*atomic.Int64
	// deaths maps every rank's control buffer: a worker's death ends the survivors'
	// collectives at once and is named with its last collective; Flight reads them.
	deaths *comm.DeathWatch
	// asking is set while a request for rank 0's collective counts is in flight
	// (collectiveStats).
	asking atomic.Bool
}

// launchRanks starts cfg.TP workers running RankJob, sends each the configuration, relays
// the all-gather of handles that joins their communicator, and waits until every one
// loaded its shard and captured its decode graphs (unless eager; rank 0's are what Graphs
// describes). Each worker runs on its share of this process's GOMAXPROCS, as the ranks of
// one process share its threads, and pins its rank to cpus[rank] (none when nil). The
// workers of a rebuild (respawn) do not read TPSLICE_FAULT: an injected fault fires once,
// as Config.Fault's one injector does across the rebuilds of in-process groups.
func launchRanks(cfg Config, mcfg models.Config, cpus [][]int, respawn bool) (_ Model, _ Graphs, err error) {
	opt := llamaOptions(cfg, nil)
	plan, err := tp.NewPlan(cfg.TP, tp.Shape{Hidden: mcfg.Hidden, Intermediate: mcfg.Intermediate, Heads: mcfg.Heads,
		KVHeads: mcfg.KVHeads, HeadDim: mcfg.HeadDim, Vocab: mcfg.Vocab, FFNBlock: 1})
	if err != nil {
		return nil, Graphs{}, fmt.Errorf("engine: %s: %w", mcfg.Name, err)
	}
	rowFloats := max(2*models.MaxCandidates, plan.VocabPerRank) + 4 // a row's widest stride
	share := max(1, runtime.GOMAXPROCS(0)/cfg.TP)
	env := []string{fmt.Sprint("GOMAXPROCS=", share)}
	if respawn {
		env = append(env, comm.EnvFault+"=") // the last of a key wins
	}
	// A live rank answers a step at most a collective's deadline after its first peer did
	// (a later one would have failed that peer's collective): one still silent then is
	// stopped or hung, and the executor names and kills it. A step nobody answered (one
	// rank has no peer to answer first) is bounded by the workers' progress instead: a live
	// rank waits outside the CPU at most a collective's deadline, so one neither runnable
	// nor using CPU time for twice that is stopped or blocked. A long prefill computes, and
	// is never cut short.
	lag := cmp.Or(cfg.CollectiveTimeout, comm.DefaultTimeout)
	e, err := executor.Launch(context.Background(), executor.Config{Workers: cfg.TP, Job: RankJobName,
		Env: env, ReplyBytes: 64 + 4*opt.MaxSeqs*rowFloats, ReplyLag: lag, StallAfter: 2 * lag})
	if err != nil {
		return nil, Graphs{}, fmt.Errorf("engine: %w", err)
	}
	m := &procModel{e: e, cfg: mcfg, opt: opt, bytes: make([]int64, cfg.TP), replays: map[int]*atomic.Int64{}}
	if !cfg.Eager {
		m.buckets = graphBuckets(cfg.MaxRunning)
		for _, b := range m.buckets {
			m.replays[b] = new(atomic.Int64)
		}
	}
	var graphs Graphs
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	setup := newRankSetup(cfg)
	setup.CPUs = cpus
	err = e.Control(func(conns []*ipc.Conn) error {
		for _, c := range conns {
			if err := ipc.SendJSON(c, kindRankSetup, setup); err != nil {
				return err
			}
		}
		all, err := ipc.RelayGather(conns, nil)
		if err == nil {
			m.deaths, err = comm.WatchDeaths(all, e.Failed(), e.DeadRank)
		}
		for _, hs := range all {
			for _, h := range hs {
				_ = h.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("joining the communicator: %w", err)
		}
		for r, c := range conns {
			var ready rankReady
			if err := ipc.RecvJSON(c, kindRankSetup, kindRankFailed, &ready); err != nil {
				return fmt.Errorf("rank %d (pid %d) loading %s: %w", r, e.Pids()[r], cfg.Model, err)
			}
			m.vpr, m.bytes[r] = ready.VocabPerRank, ready.WeightBytes
			if r == 0 {
				graphs = ready.Graphs
			}
			for _, n := range ready.LoadNotes {
				if !slices.Contains(m.notes, n) {
					m.notes = append(m.notes, n)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, Graphs{}, fmt.Errorf("engine: worker processes: %w", err)
	}
	return m, graphs, nil
}

// graphStep returns the bucket of the decode graph the workers replay for st, and st as
// that graph samples it (a greedy graph's rows carry zero samplers, which propose as
// none do); bucket 0, st itself, for a step that runs eagerly. A graph serves a step of
// one token a sequence, every one sampled, without logprobs or more than one candidate,
// as the engine's own choice of a graph (decodeGraph) says.
func (m *procModel) graphStep(st models.Step) (int, models.Step) {
	n := len(st.IDs)
	if m.buckets == nil || st.Logprobs || st.Candidates > 1 || len(st.Sample) != n || len(st.Batch.Seq) != n || len(st.Batch.Tables) != n {
		return 0, st
	}
	for i := range n {
		if st.Sample[i] != i || st.Batch.Seq[i] != int32(i) {
			return 0, st
		}
	}
	for _, b := range m.buckets {
		if b >= n {
			if st.Candidates == 1 && st.Samplers == nil {
				st.Samplers = make([]layers.RowSampler, n)
			}
			return b, st
		}
	}
	return 0, st
}

// DecodeGraphReplays returns, per bucket, the steps every worker replayed its decode graph
// for (what Engine.DecodeGraphReplays reports).
func (m *procModel) DecodeGraphReplays() map[int]int64 {
	out := make(map[int]int64, len(m.replays))
	for b, n := range m.replays {
		out[b] = n.Load()
	}
	return out
}

// Forward sends st to every worker and gathers their rows.
func (m *procModel) Forward(st models.Step) error {
	m.number++
	bucket, st := m.graphStep(st)
	steps := m.e.Steps()
	if err := steps.Send(stepwire.Step{Number: m.number, Bucket: bucket, Forward: st}); err != nil {
		return m.deaths.Named(fmt.Errorf("engine: %w", err))
	}
	replies, err := steps.Gather()
	if err != nil {
		return m.deaths.Named(fmt.Errorf("engine: %w", err))
	}
	rows := make([][]float32, len(replies))
	var errs []error
	for r, rp := range replies {
		switch {
		case rp.Err != "":
			errs = append(errs, fmt.Errorf("engine: rank %d (pid %d), step %d: %s", r, m.e.Pids()[r], m.number, rp.Err))
		case rp.Number != m.number || rp.Bucket != bucket:
			errs = append(errs, fmt.Errorf("engine: rank %d (pid %d) answered step %d with bucket %d, want step %d with bucket %d",
				r, m.e.Pids()[r], rp.Number, rp.Bucket, m.number, bucket))
		}
		rows[r] = rp.Rows
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if m.last, err = models.NewGathered(st, m.vpr, m.cfg.Vocab, rows); err != nil {
		return err
	}
	if bucket > 0 {
		m.replays[bucket].Add(1)
	}
	return nil
}

// Pids returns the worker processes' ids, by rank.
func (m *procModel) Pids() []int { return m.e.Pids() }

func (m *procModel) Config() models.Config                       { return m.cfg }
func (m *procModel) Options() models.LlamaOptions                { return m.opt }
func (m *procModel) Group() *tp.Group                            { return nil }
func (m *procModel) Candidates(models.Step) [][]layers.Candidate { return m.last.Candidates() }
func (m *procModel) Logits(models.Step) [][]float32              { return m.last.Logits() }
func (m *procModel) SamplerTerms(models.Step) [][]float32        { return m.last.SamplerTerms() }
func (m *procModel) LogSumExp(models.Step) []float64             { return m.last.LogSumExp() }
func (m *procModel) WeightBytes() []int64                        { return slices.Clone(m.bytes) }
func (m *procModel) LoadNotes() []string                         { return m.notes }

// CaptureDecode is refused: each worker captures its rank's decode graphs itself, and
// replays them for the steps Forward marks (graphStep).
func (m *procModel) CaptureDecode(b, k int) (*models.DecodeGraph, error) {
	return nil, errors.New("engine: the worker processes capture their decode graphs themselves")
}

// Close ends the workers (they exit when the driver hangs up) and reaps them.
func (m *procModel) Close() {
	if m.deaths != nil {
		_ = m.deaths.Close()
	}
	_ = m.e.Close()
}

// Flight returns every rank's last collective, as its control buffer records it (each
// worker keeps its full flight recorder).
func (m *procModel) Flight() comm.Flight { return m.deaths.Flight() }
