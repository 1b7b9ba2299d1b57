package decode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/vec"
)

// Options is one run of the benchmark: Config's model at every TP degree of TPs, each
// batch size of Batches at each, every request PromptLen seeded random tokens (Config.Seed)
// generating GenLen greedily.
type Options struct {
	// Config is the engine of every TP degree; Run sets TP and sizes the scheduler and KV
	// cache so that the largest batch decodes together without a preemption.
	Config            engine.Config
	TPs, Batches      []int
	PromptLen, GenLen int // GenLen: MinGenLen at least
	// NewEngine starts the engine of one TP degree, writing what it logs (load notes, an
	// injected fault) to log, above the progress bar; nil: engine.New.
	NewEngine func(cfg engine.Config, log io.Writer) (*engine.Engine, error)
	// Progress gets a bar redrawn in place where it is a terminal, else a line per
	// finished TP × batch; nil: none.
	Progress io.Writer
}

// Run measures o: the read bandwidth (the roofline), then every TP degree and batch size,
// each batch run once to warm up and once measured with rank 0's kernels traced. An error
// names the bad option or the TP degree (and batch) it failed at, as bench's flags do.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.PromptLen < 1 {
		return Report{}, fmt.Errorf("--prompt-len must be at least 1, got %d", o.PromptLen)
	}
	if o.GenLen < MinGenLen {
		return Report{}, fmt.Errorf("--gen-len must be at least %d (the breakdown needs whole decode steps of the full batch), got %d", MinGenLen, o.GenLen)
	}
	if o.NewEngine == nil {
		o.NewEngine = func(cfg engine.Config, _ io.Writer) (*engine.Engine, error) { return engine.New(cfg) }
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if err := fit(&o); err != nil {
		return Report{}, err
	}
	p := newProgress(o.Progress, len(o.TPs)*len(o.Batches))
	defer p.done()
	p.note("measuring read bandwidth")
	rep := Report{Model: o.Config.Model, ReadGBps: readGBps()}
	prompts := &promptPool{seed: o.Config.Seed, n: o.PromptLen}
	for _, n := range o.TPs {
		rows, wb, err := benchTP(ctx, o, n, prompts, p)
		if err != nil {
			return Report{}, fmt.Errorf("--tp %d: %w", n, err)
		}
		if rep.WeightBytes == 0 || wb < rep.WeightBytes {
			rep.WeightBytes = wb
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	return rep, nil
}

// fit sizes o.Config for the largest batch: every batch decodes together, in one captured
// bucket; every sequence can grow to the whole context without a preemption; and the
// prompts, drawn once and run again, are computed every time.
func fit(o *Options) error {
	if len(o.Batches) == 0 || len(o.TPs) == 0 {
		return errors.New("no TP degree or batch size to run")
	}
	mcfg, err := engine.LoadConfig(o.Config.Model)
	if err != nil {
		return fmt.Errorf("--model %s: %w", o.Config.Model, err)
	}
	maxBatch := slices.Max(o.Batches)
	o.Config.MaxRunning = maxBatch
	o.Config.KVBlocks = maxBatch * ((mcfg.ContextLength + engine.BlockSize - 1) / engine.BlockSize)
	o.Config.NoPrefixCaching = true
	o.Config.MaxWaiting = max(256, maxBatch)
	o.Config.MaxBatchTokens = max(256, maxBatch)
	return nil
}

// readGBps measures the read bandwidth as membw does by default (2 threads over 256 MiB)
// but with 3 rounds instead of 5, so the roofline costs well under a second.
func readGBps() float64 { return vec.ReadBandwidth(2, 256<<20, 3) / 1e9 }

// benchTP loads the model at TP n and measures every batch size; it returns the rows and
// the weight bytes the ranks hold together.
func benchTP(ctx context.Context, o Options, n int, prompts *promptPool, p *progress) ([]Row, int64, error) {
	cfg := o.Config
	cfg.TP = n
	p.start(n, 0, "loading")
	e, err := o.NewEngine(cfg, p)
	if err != nil {
		return nil, 0, err
	}
	defer e.Close()
	var wb int64
	for _, b := range e.Model().WeightBytes() {
		wb += b
	}
	prompts.setModel(e)
	var rows []Row
	for _, b := range o.Batches {
		row, err := benchCell(ctx, e, n, o.GenLen, b, prompts, p)
		if err != nil {
			return nil, 0, fmt.Errorf("--batch %d: %w", b, err)
		}
		rows = append(rows, row)
		p.finish(row)
	}
	return rows, wb, nil
}

// benchCell runs batch b on e, at TP n, once to warm up — redrawing prompts whose greedy
// output hits EOS early, so that every request makes exactly genLen tokens — then once
// measured, with rank 0's kernels traced (in rank 0's worker process under --executor mp).
func benchCell(ctx context.Context, e *engine.Engine, n, genLen, b int, prompts *promptPool, p *progress) (Row, error) {
	p.start(n, b, "warm-up")
	for attempt := 0; ; attempt++ {
		run, err := runBatch(ctx, e, prompts.get(b), genLen, p)
		if err != nil {
			return Row{}, err
		}
		if len(run.short) == 0 || attempt == 3 {
			break
		}
		for _, i := range run.short {
			prompts.redraw(i)
		}
	}
	p.start(n, b, "measuring")
	// A batch whose KV blocks or slots did not all fit at once is admitted at two step
	// boundaries and decodes together for fewer steps; with too few to time, run it again.
	for attempt := 0; ; attempt++ {
		stop, err := traceRank0(e)
		if err != nil {
			return Row{}, err
		}
		run, err := runBatch(ctx, e, prompts.get(b), genLen, p)
		row, ok, stopErr := stop(b, run)
		if err = errors.Join(err, stopErr); err != nil {
			return Row{}, err
		}
		if !ok && attempt < 3 {
			continue
		}
		if !ok {
			return Row{}, errors.New("in 4 runs the batch never decoded together for 2 whole steps (its requests were admitted too far apart)")
		}
		if len(run.short) > 0 {
			p.note(fmt.Sprintf("tp=%d batch=%d: %d requests stopped at EOS before %d tokens even with redrawn prompts", n, b, len(run.short), genLen))
		}
		row.TP, row.OutputTokens = n, run.tokens
		row.E2ETokensPerS = float64(run.tokens) / run.wall.Seconds()
		return row, nil
	}
}
