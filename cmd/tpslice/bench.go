package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/models/stories260k"
	"github.com/tpslice/tpslice/tp"
	"github.com/tpslice/tpslice/vec"
)

// decodeBenchReport is bench's --json output.
type decodeBenchReport struct {
	Model       string           `json:"model"`
	WeightBytes int64            `json:"weight_bytes"` // summed over ranks; the least of the TP degrees run (replicas add a little)
	ReadGBps    float64          `json:"read_gbps"`    // membw: weight_bytes / read_gbps is a step's floor
	Rows        []decodeBenchRow `json:"rows"`
}

// decodeBenchRow is one TP degree × batch size.
type decodeBenchRow struct {
	TP         int     `json:"tp"`
	Batch      int     `json:"batch"`
	TTFTMs     float64 `json:"ttft_ms"`
	P50Ms      float64 `json:"token_latency_ms_p50"`
	P99Ms      float64 `json:"token_latency_ms_p99"`
	TokensPerS float64 `json:"tokens_per_s"`
	// E2ETokensPerS is the batch's output tokens over its wall time, from its submission
	// to its last token (TTFT and decode).
	E2ETokensPerS float64 `json:"e2e_tokens_per_s"`
	CommShare     float64 `json:"comm_share"`
	// CommWaitShare is the part of CommShare rank 0 spent blocked on its peers (comm's
	// recorded barrier waits): skew between ranks, not data moving.
	CommWaitShare float64            `json:"comm_wait_share"`
	Breakdown     map[string]float64 `json:"breakdown_ms"`
	// AllReduce names the collective each call site ran, keyed by the kernel whose output
	// it reduces ("after o_proj"), as plan's rows do; empty at TP 1.
	AllReduce map[string]string `json:"allreduce"`
}

// benchClasses are the breakdown's op classes, in the order the table and the chart show
// them; collective kernels are keyed "<op>.<algo>" (allreduce+rmsnorm.oneshot,
// allgather.oneshot, …) instead, so the algorithm each call site ran shows.
func benchClasses() []string {
	return []string{"gemm", "attention", "norm", "elementwise", "embedding", "sampling"}
}

const (
	hostOverhead = "host overhead" // a step's time outside rank 0's kernels: launches, sampling, scheduling
	maxBenchTP   = device.MaxDevices
	// maxBenchBatch bounds --batch: every batch slot reserves a whole context of KV cache.
	maxBenchBatch = 256
	// minGenLen leaves whole decode steps with the full batch between the last prefill and
	// the first request's end, which is where the breakdown is traced.
	minGenLen = 8
)

type decodeBenchOptions struct {
	cfg               engine.Config
	tps, batches      []int
	promptLen, genLen int
	asJSON            bool
	plotDir           string
}

func benchCmd(args []string, stdout, stderr io.Writer) error {
	o, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p := newBenchProgress(stderr, len(o.tps)*len(o.batches))
	p.note("measuring read bandwidth")
	rep := decodeBenchReport{Model: o.cfg.Model, ReadGBps: readGBps()}
	prompts := &promptPool{seed: o.cfg.Seed, n: o.promptLen}
	for _, n := range o.tps {
		rows, wb, err := benchTP(ctx, o, n, prompts, p)
		if err != nil {
			p.done()
			return fmt.Errorf("bench: --tp %d: %w", n, err)
		}
		if rep.WeightBytes == 0 || wb < rep.WeightBytes {
			rep.WeightBytes = wb
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	p.done()
	if o.plotDir != "" {
		if err := plotBench(o.plotDir, rep); err != nil {
			return fmt.Errorf("bench: --plot %s: %w", o.plotDir, err)
		}
		fmt.Fprintf(stderr, "# plots: %s, %s\n", filepath.Join(o.plotDir, "latency_vs_tp.png"), filepath.Join(o.plotDir, "breakdown.png"))
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printBench(stdout, o, rep)
}

// parseBench parses and checks the flags, and that every TP degree shards the model, before
// anything loads: a bad value fails in milliseconds, not after the degrees before it ran.
func parseBench(args []string, stderr io.Writer) (decodeBenchOptions, error) {
	var (
		o                          decodeBenchOptions
		tps, batches, dt, fv, algo string
		fail                       = func(format string, a ...any) error { return fmt.Errorf("bench: "+format, a...) }
	)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cfg.Model, "model", stories260k.Name, modelUsage)
	fs.StringVar(&tps, "tp", "1,2,4,8", "TP degrees to run, comma-separated, each 1 to 8")
	fs.StringVar(&batches, "batch", "1,8,32", "batch sizes (concurrent requests), comma-separated")
	fs.IntVar(&o.promptLen, "prompt-len", 32, "prompt tokens of every request (seeded random ids)")
	fs.IntVar(&o.genLen, "gen-len", 32, "tokens every request generates (greedy)")
	fs.Uint64Var(&o.cfg.Seed, "seed", 0, "seed of the prompts and of a preset's dummy weights")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of the table")
	fs.StringVar(&o.plotDir, "plot", "", "write latency_vs_tp.png and breakdown.png into `DIR`")
	fs.StringVar(&dt, "dtype", "", weightDTypeUsage)
	fs.Var(dtypeFlag{&o.cfg.KVDType}, "kv-dtype", "store the KV cache as f32 (default), bf16 or f16 (half the memory)")
	fs.StringVar(&fv, "fused", "auto", "all-reduce + RMSNorm: auto, unfused, oneshot, twoshot, nvls, tree or seqparallel (reduce-scatter + norm + all-gather)")
	var fusedSelect fusedSelectFlags
	fusedSelect.register(fs)
	fs.StringVar(&algo, "algo", "auto", algoUsage)
	addWireFlag(fs, &o.cfg.AllReduceWire)
	fs.BoolVar(&o.cfg.Eager, "eager", false, "launch every decode step from the host instead of replaying captured graphs")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		return o, fail("unexpected argument %q", fs.Arg(0))
	case o.promptLen < 1:
		return o, fail("--prompt-len must be at least 1, got %d", o.promptLen)
	case o.genLen < minGenLen:
		return o, fail("--gen-len must be at least %d (the breakdown needs whole decode steps of the full batch), got %d", minGenLen, o.genLen)
	}
	if o.tps, err = parseIntList("tp", tps, 1, maxBenchTP); err != nil {
		return o, fail("%w", err)
	}
	if o.batches, err = parseIntList("batch", batches, 1, maxBenchBatch); err != nil {
		return o, fail("%w", err)
	}
	if dt != "" {
		if o.cfg.WeightDType, err = dtype.Parse(dt); err != nil {
			return o, fail("--dtype: %w", err)
		}
	}
	if o.cfg.Fused, err = fused.ParseVariant(fv); err != nil {
		return o, fail("--fused: %w", err)
	}
	if err := fusedSelect.apply(&o.cfg); err != nil {
		return o, fail("%w", err)
	}
	if o.cfg.Algo, err = comm.ParseAlgo(algo); err != nil {
		return o, fail("--algo: %w", err)
	}
	if err := checkWire(o.cfg.AllReduceWire, o.cfg.Algo, o.cfg.Fused); err != nil {
		return o, fail("%w", err)
	}
	mcfg, err := engine.LoadConfig(o.cfg.Model)
	if err != nil {
		return o, fail("--model %s: %w", o.cfg.Model, err)
	}
	if o.promptLen+o.genLen > mcfg.ContextLength {
		return o, fail("--prompt-len %d + --gen-len %d exceed %s's context of %d tokens", o.promptLen, o.genLen, o.cfg.Model, mcfg.ContextLength)
	}
	for _, n := range o.tps {
		if _, err := tp.NewPlan(n, tp.Shape{Hidden: mcfg.Hidden, Intermediate: mcfg.Intermediate, Heads: mcfg.Heads,
			KVHeads: mcfg.KVHeads, HeadDim: mcfg.HeadDim, Vocab: mcfg.Vocab}); err != nil {
			return o, fail("--tp %d does not fit %s: %w", n, o.cfg.Model, err)
		}
	}
	if o.plotDir != "" {
		if err := writableDir(o.plotDir); err != nil {
			return o, fail("--plot %s: %w", o.plotDir, err)
		}
	}
	maxBatch := slices.Max(o.batches)
	o.cfg.MaxRunning = maxBatch // every batch decodes together, in one captured bucket
	// Every sequence of the largest batch can grow to the whole context without a
	// preemption, and the prompts, drawn once and run again, are computed every time.
	o.cfg.KVBlocks = maxBatch * ((mcfg.ContextLength + engine.BlockSize - 1) / engine.BlockSize)
	o.cfg.NoPrefixCaching = true
	o.cfg.MaxWaiting = max(256, maxBatch)
	o.cfg.MaxBatchTokens = max(256, maxBatch)
	return o, nil
}

// writableDir makes dir if needed and proves a file can be created in it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tpslice-bench-*")
	if err != nil {
		return err
	}
	_ = f.Close()
	return os.Remove(f.Name())
}

// readGBps measures the read bandwidth as membw does by default (2 threads over 256 MiB)
// but with 3 rounds instead of 5, so the roofline costs well under a second.
func readGBps() float64 { return vec.ReadBandwidth(2, 256<<20, 3) / 1e9 }

// benchTP loads the model at TP n and measures every batch size; it returns the rows and
// the weight bytes the ranks hold together.
func benchTP(ctx context.Context, o decodeBenchOptions, n int, prompts *promptPool, p *benchProgress) ([]decodeBenchRow, int64, error) {
	cfg := o.cfg
	cfg.TP = n
	p.start(n, 0, "loading")
	e, err := newEngine(cfg, p.w)
	if err != nil {
		return nil, 0, err
	}
	defer e.Close()
	p.notes(e.Model())
	var wb int64
	for _, b := range e.Model().WeightBytes() {
		wb += b
	}
	prompts.setModel(e)
	var rows []decodeBenchRow
	for _, b := range o.batches {
		row, err := benchCell(ctx, e, o.genLen, b, prompts, p)
		if err != nil {
			return nil, 0, fmt.Errorf("--batch %d: %w", b, err)
		}
		rows = append(rows, row)
		p.finish(row)
	}
	return rows, wb, nil
}

// benchCell runs batch b once to warm up — redrawing prompts whose greedy output hits EOS
// early, so that every request makes exactly genLen tokens — then once measured, with rank
// 0's kernels traced.
func benchCell(ctx context.Context, e *engine.Engine, genLen, b int, prompts *promptPool, p *benchProgress) (decodeBenchRow, error) {
	g := e.Model().Group()
	n := g.World()
	p.start(n, b, "warm-up")
	for attempt := 0; ; attempt++ {
		run, err := runBatch(ctx, e, prompts.get(b), genLen, p)
		if err != nil {
			return decodeBenchRow{}, err
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
		col := &collector{dev: g.Device(0)}
		g.Node().SetTracer(col)
		run, err := runBatch(ctx, e, prompts.get(b), genLen, p)
		g.Node().SetTracer(nil)
		if err != nil {
			return decodeBenchRow{}, err
		}
		row, ok := col.row(b, run, g.Comm().Recorder(0).Records())
		if !ok && attempt < 3 {
			continue
		}
		if !ok {
			return decodeBenchRow{}, errors.New("in 4 runs the batch never decoded together for 2 whole steps (its requests were admitted too far apart)")
		}
		if len(run.short) > 0 {
			p.note(fmt.Sprintf("tp=%d batch=%d: %d requests stopped at EOS before %d tokens even with redrawn prompts", n, b, len(run.short), genLen))
		}
		row.TP = n
		row.E2ETokensPerS = float64(run.tokens) / run.wall.Seconds()
		return row, nil
	}
}

// benchKeys orders the breakdown keys of every row: the classes, the collectives by name,
// anything else, then the host overhead.
func benchKeys(rows []decodeBenchRow) []string {
	classes := benchClasses()
	var colls, other []string
	for _, r := range rows {
		for k := range r.Breakdown {
			switch {
			case slices.Contains(classes, k) || k == hostOverhead || slices.Contains(colls, k) || slices.Contains(other, k):
			case strings.Contains(k, "."):
				colls = append(colls, k)
			default:
				other = append(other, k)
			}
		}
	}
	slices.Sort(colls)
	slices.Sort(other)
	return slices.Concat(classes, colls, other, []string{hostOverhead})
}

func printBench(w io.Writer, o decodeBenchOptions, rep decodeBenchReport) error {
	mode := "decode graphs"
	if o.cfg.Eager {
		mode = "eager"
	}
	if w := o.cfg.AllReduceWire; w != comm.WireExact {
		mode += "; all-reduces on the " + w.String() + " wire"
	}
	fmt.Fprintf(w, "# tpslice bench: %s, %.1f MB of weights; prompt %d, generate %d tokens per request (greedy); %s\n",
		rep.Model, float64(rep.WeightBytes)/1e6, o.promptLen, o.genLen, mode)
	if rep.ReadGBps > 0 {
		fmt.Fprintf(w, "# read bandwidth %.1f GB/s (membw): reading the weights once takes %.2f ms, the floor of a decode step\n",
			rep.ReadGBps, float64(rep.WeightBytes)/rep.ReadGBps/1e6)
	}
	fmt.Fprintln(w, "# TTFT: mean over the batch, from its submission; p50/p99: gaps between a request's successive tokens while")
	fmt.Fprintln(w, "# the whole batch decodes, and tok/s the batch's tokens over that time; e2e tok/s: the batch's output tokens")
	fmt.Fprintln(w, "# over its submission to its last token (TTFT and decode); comm: collectives' share of a step;")
	fmt.Fprintln(w, "# then rank 0's kernel ms per decode step by class (host overhead: the rest of the step)")
	keys := benchKeys(rep.Rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "tp\tbatch\tTTFT ms\tp50 ms\tp99 ms\ttok/s\te2e tok/s\tcomm\t(wait)\t")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw)
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f%%\t%.1f%%\t", r.TP, r.Batch, r.TTFTMs, r.P50Ms, r.P99Ms, r.TokensPerS, r.E2ETokensPerS, 100*r.CommShare, 100*r.CommWaitShare)
		for _, k := range keys {
			if v, ok := r.Breakdown[k]; ok {
				fmt.Fprintf(tw, "%.3f\t", v)
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// plotBench writes latency_vs_tp.png (p50 against TP, a line per batch size) and
// breakdown.png (a stacked bar per TP × batch).
func plotBench(dir string, rep decodeBenchReport) error {
	var points []tpPoint
	for _, r := range rep.Rows {
		points = append(points, tpPoint{TP: r.TP, Batch: r.Batch, Latency: r.P50Ms, Breakdown: r.Breakdown})
	}
	return plotTP(dir, rep.Model+" (measured)", points, benchKeys(rep.Rows))
}

// benchProgress reports progress on stderr: a bar redrawn in place on a terminal; elsewhere
// (a log, a pipe) one line per finished TP × batch, since \r redraws would pile into one
// unreadable line there.
type benchProgress struct {
	w          io.Writer
	tty        bool
	cells, did int
	mu         sync.Mutex
	label      string
	tokens     int
	drawn      time.Time
}

func newBenchProgress(w io.Writer, cells int) *benchProgress {
	return &benchProgress{w: w, tty: bench.IsTerminal(w), cells: cells}
}

// notes prints the model's load notes (printLoadNotes) above the bar.
func (p *benchProgress) notes(m engine.Model) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	printLoadNotes(p.w, m)
	p.draw(true)
}

func (p *benchProgress) start(tp, batch int, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = fmt.Sprintf("tp=%d %s", tp, phase)
	if batch > 0 {
		p.label = fmt.Sprintf("tp=%d batch=%d %s", tp, batch, phase)
	}
	p.tokens = 0
	p.draw(true)
}

// token counts a token; the bar is redrawn at most every 100 ms.
func (p *benchProgress) token() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens++
	p.draw(false)
}

func (p *benchProgress) draw(force bool) {
	if !p.tty || (!force && time.Since(p.drawn) < 100*time.Millisecond) {
		return
	}
	p.drawn = time.Now()
	const width = 24
	fill := width * p.did / max(p.cells, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s %d tokens", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.did, p.cells, p.label, p.tokens)
}

func (p *benchProgress) finish(r decodeBenchRow) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.did++
	if !p.tty {
		fmt.Fprintf(p.w, "# bench: %d/%d tp=%d batch=%d: p50 %.3f ms, %.1f tok/s\n", p.did, p.cells, r.TP, r.Batch, r.P50Ms, r.TokensPerS)
	}
	p.draw(true)
}

// note prints a line, keeping the bar below it.
func (p *benchProgress) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "# bench: %s\n", s)
	p.draw(true)
}

// done clears the bar.
func (p *benchProgress) done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
