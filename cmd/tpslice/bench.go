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

	"github.com/tpslice/tpslice/bench/decode"
	"github.com/tpslice/tpslice/chart"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/tp"
)

const (
	maxBenchTP = device.MaxDevices
	// maxBenchBatch bounds --batch: every batch slot reserves a whole context of KV cache.
	maxBenchBatch = 256
)

// decodeBenchOptions are bench's flags: the benchmark's options and what to print.
type decodeBenchOptions struct {
	decode.Options
	asJSON     bool
	plotDir    string
	cpuProfile string // --cpuprofile: the whole run's CPU profile (loading included)
}

func benchCmd(args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if perr := stopProfile(); perr != nil {
			err = errors.Join(err, fmt.Errorf("bench: %w", perr))
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o.NewEngine = func(cfg engine.Config, log io.Writer) (*engine.Engine, error) {
		e, err := newEngine(cfg, log)
		if err == nil {
			printLoadNotes(log, e.Model())
		}
		return e, err
	}
	o.Progress = stderr
	rep, err := decode.Run(ctx, o.Options)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
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
	return decode.WriteTable(stdout, o.Options, rep)
}

// parseBench parses and checks the flags, and that every TP degree shards the model, before
// anything loads: a bad value fails in milliseconds, not after the degrees before it ran.
func parseBench(args []string, stderr io.Writer) (decodeBenchOptions, error) {
	var (
		o            decodeBenchOptions
		ef           engineFlags
		tps, batches string
		fail         = func(format string, a ...any) error { return fmt.Errorf("bench: "+format, a...) }
	)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef.seedAlso = "the prompts"
	ef.register(fs)
	fs.StringVar(&tps, "tp", "1,2,4,8", "TP degrees to run, comma-separated, each 1 to 8")
	fs.StringVar(&batches, "batch", "1,8,32", "batch sizes (concurrent requests), comma-separated")
	fs.IntVar(&o.PromptLen, "prompt-len", 32, "prompt tokens of every request (seeded random ids)")
	fs.IntVar(&o.GenLen, "gen-len", 32, "tokens every request generates (greedy)")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of the table")
	fs.StringVar(&o.plotDir, "plot", "", "write latency_vs_tp.png and breakdown.png into `DIR`")
	cpuProfileFlag(fs, &o.cpuProfile)
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fail("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.TPs, err = parseIntList("tp", tps, 1, maxBenchTP); err != nil {
		return o, fail("%w", err)
	}
	if o.Batches, err = parseIntList("batch", batches, 1, maxBenchBatch); err != nil {
		return o, fail("%w", err)
	}
	if o.Config, err = ef.config(); err != nil {
		return o, fail("%w", err)
	}
	mcfg, err := engine.LoadConfig(o.Config.Model)
	if err != nil {
		return o, fail("--model %s: %w", o.Config.Model, err)
	}
	if o.PromptLen+o.GenLen > mcfg.ContextLength {
		return o, fail("--prompt-len %d + --gen-len %d exceed %s's context of %d tokens", o.PromptLen, o.GenLen, o.Config.Model, mcfg.ContextLength)
	}
	for _, n := range o.TPs {
		if _, err := tp.NewPlan(n, tp.Shape{Hidden: mcfg.Hidden, Intermediate: mcfg.Intermediate, Heads: mcfg.Heads,
			KVHeads: mcfg.KVHeads, HeadDim: mcfg.HeadDim, Vocab: mcfg.Vocab}); err != nil {
			return o, fail("--tp %d does not fit %s: %w", n, o.Config.Model, err)
		}
	}
	if o.plotDir != "" {
		if err := writableDir(o.plotDir); err != nil {
			return o, fail("--plot %s: %w", o.plotDir, err)
		}
	}
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

// plotBench writes latency_vs_tp.png (p50 against TP, a line per batch size) and
// breakdown.png (a stacked bar per TP × batch).
func plotBench(dir string, rep decode.Report) error {
	var points []chart.TPPoint
	for _, r := range rep.Rows {
		points = append(points, chart.TPPoint{TP: r.TP, Batch: r.Batch, Latency: r.P50Ms, Breakdown: r.Breakdown})
	}
	return chart.TPSweep(dir, rep.Model+" (measured)", points, decode.Keys(rep.Rows))
}
