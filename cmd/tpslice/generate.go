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
	"slices"
	"strings"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/trace"
)

// generateReport is generate's --json output (documented in docs/cli.md).
type generateReport struct {
	Model              string            `json:"model"`
	TP                 int               `json:"tp"`
	PromptIDs          []int32           `json:"prompt_ids"`
	OutputIDs          []int32           `json:"output_ids"`
	Text               string            `json:"text"`
	FinishReason       string            `json:"finish_reason"`
	TTFTMs             float64           `json:"ttft_ms"`
	DecodeTokensPerSec float64           `json:"decode_tokens_per_s"`
	Allreduce          map[string]string `json:"allreduce"`
	Graphs             *graphsReport     `json:"graphs,omitempty"` // absent with --eager
}

type graphsReport struct {
	Buckets    []int   `json:"buckets"`
	Nodes      int     `json:"nodes_per_rank"`
	CaptureMs  float64 `json:"capture_ms"`
	InputBytes int     `json:"static_input_bytes"`
	InPlace    int     `json:"in_place_collectives_per_rank"`
	BytesSaved int64   `json:"staging_bytes_saved"`
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func generate(args []string, stdout, stderr io.Writer) error {
	var (
		ef                engineFlags
		req               engine.Request
		prompt            string
		traceFile         string
		asJSON            bool
		stops             stringList
		temperature, topP float64
	)
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef.seedAlso = "the sampling"
	ef.register(fs)
	ef.registerRuntime(fs)
	fs.StringVar(&prompt, "prompt", "Once upon a time", "the prompt")
	fs.IntVar(&req.MaxTokens, "max-tokens", 32, "tokens to generate at most")
	fs.Float64Var(&temperature, "temperature", 1, "sampling temperature; 0 is greedy")
	fs.Float64Var(&topP, "top-p", 1, "nucleus sampling: keep the most likely tokens up to this probability")
	fs.IntVar(&req.Sampling.TopK, "top-k", 0, "keep the K most likely tokens (0: all)")
	fs.Var(&stops, "stop", "stop when the output contains this string (repeatable)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object instead of the text and timings")
	fs.StringVar(&traceFile, "trace", "", "write the kernels every stream ran during generation to `FILE` ("+traceFormats+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("generate: unexpected argument %q (give the prompt with --prompt)", fs.Arg(0))}
	}
	cfg, err := ef.config()
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	req.Sampling.Seed = cfg.Seed
	req.Prompt, req.Stop = prompt, stops
	req.Sampling.Temperature, req.Sampling.TopP = float32(temperature), float32(topP)
	if err := req.Sampling.Validate(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if req.MaxTokens < 1 {
		return fmt.Errorf("generate: --max-tokens must be at least 1, got %d", req.MaxTokens)
	}
	if cfg.Fabric, err = resolveFabric(ef.topology, cfg.TP, stderr); err != nil {
		return fmt.Errorf("generate: %w", err)
	}

	if traceFile != "" && cfg.Processes {
		return usageError{errors.New("generate: --trace records every rank's kernels in this process; use --executor inproc")}
	}
	var traceOut *os.File
	if traceFile != "" { // created now, so that a bad path fails before the model loads
		if traceOut, err = os.Create(traceFile); err != nil {
			return fmt.Errorf("generate: --trace: %w", err)
		}
		defer traceOut.Close() // for early returns; writeTrace closes it and reports that error
	}
	e, err := newEngine(cfg, stderr)
	if err != nil {
		if traceOut != nil {
			_ = traceOut.Close()
			_ = os.Remove(traceFile)
		}
		return fmt.Errorf("generate: %w", err)
	}
	defer e.Close()
	printLoadNotes(stderr, e.Model())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	emit := func(t engine.Token) error {
		if !asJSON {
			_, err := io.WriteString(stdout, t.Text)
			return err
		}
		return nil
	}
	var rec *trace.Recorder
	if traceOut != nil {
		g := e.Model().Group()
		rankOf := map[int]int{}
		for r := range g.World() {
			rankOf[g.Device(r).ID()] = r
		}
		rec = trace.NewRecorder(trace.Config{ProcessName: func(d int) string {
			if r, ok := rankOf[d]; ok {
				return fmt.Sprintf("rank %d", r)
			}
			return fmt.Sprintf("device %d", d)
		}})
		g.Node().SetTracer(rec)
	}
	res, err := e.Generate(ctx, req, emit)
	if err != nil {
		err = fmt.Errorf("generate: %w", err)
	}
	var traceNote string
	if rec != nil {
		e.Model().Group().Node().SetTracer(nil)
		if werr := writeTrace(traceOut, rec, fmt.Sprintf("generate: %s at TP=%d", cfg.Model, cfg.TP)); werr != nil {
			return errors.Join(err, fmt.Errorf("generate: %w", werr))
		}
		traceNote = fmt.Sprintf("# trace: %s (%d events", traceFile, rec.Len())
		if d := rec.Dropped(); d > 0 {
			traceNote += fmt.Sprintf(", %d dropped", d)
		}
		traceNote += ")\n"
		if asJSON || err != nil {
			fmt.Fprint(stderr, traceNote) // stdout stays one JSON object
		}
	}
	if err != nil {
		return err
	}
	var graphs *graphsReport
	if g := e.Graphs(); len(g.Buckets) > 0 {
		graphs = &graphsReport{Buckets: g.Buckets, Nodes: g.Nodes, CaptureMs: float64(g.CaptureTime.Microseconds()) / 1e3, InputBytes: g.InputBytes,
			InPlace: g.InPlace, BytesSaved: e.StagingBytesSaved()}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(generateReport{
			Model: cfg.Model, TP: cfg.TP, PromptIDs: res.PromptIDs, OutputIDs: res.OutputIDs, Text: res.Text,
			FinishReason: res.FinishReason, TTFTMs: float64(res.TTFT.Microseconds()) / 1e3,
			DecodeTokensPerSec: res.DecodeTokensPerSec, Allreduce: res.Allreduce, Graphs: graphs,
		})
	}
	fmt.Fprintf(stdout, "\n\n# %s at TP=%d: prompt %d tokens, generated %d (finish: %s)\n", cfg.Model, cfg.TP, len(res.PromptIDs), len(res.OutputIDs), res.FinishReason)
	fmt.Fprintf(stdout, "# time to first token %.1f ms, decode %.1f tokens/s\n", float64(res.TTFT.Microseconds())/1e3, res.DecodeTokensPerSec)
	if graphs != nil {
		fmt.Fprintf(stdout, "# decode graphs: buckets %v, %d nodes per rank, captured in %.1f ms, %d bytes of static inputs\n",
			graphs.Buckets, graphs.Nodes, graphs.CaptureMs, graphs.InputBytes)
		fmt.Fprintf(stdout, "# %d all-reduces per rank read their peers' inputs in place: %d bytes of staging copies saved\n",
			graphs.InPlace, graphs.BytesSaved)
	} else {
		fmt.Fprintln(stdout, "# decode graphs: off (--eager)")
	}
	sites := make([]string, 0, len(res.Allreduce))
	for s := range res.Allreduce {
		sites = append(sites, s)
	}
	slices.Sort(sites)
	for _, s := range sites {
		fmt.Fprintf(stdout, "# all-reduce %-20s %s\n", s, res.Allreduce[s])
	}
	fmt.Fprint(stdout, traceNote)
	return nil
}

// traceFormats is what --trace writes, for help texts.
const traceFormats = "Chrome/Perfetto JSON for ui.perfetto.dev and chrome://tracing; an SVG timeline when FILE ends in .svg"

// writeTrace writes rec's kernels to f, as an SVG timeline titled title when f's name ends
// in .svg and in the Chrome trace-event format otherwise, and closes f.
func writeTrace(f *os.File, rec *trace.Recorder, title string) error {
	var err error
	if strings.HasSuffix(f.Name(), ".svg") {
		err = rec.WriteSVG(f, title)
	} else {
		err = rec.WriteChrome(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--trace %s: %w", f.Name(), err)
	}
	return nil
}
