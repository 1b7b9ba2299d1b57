package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
)

// modelUsage is the help of --model for the commands that load a model, whose default is
// the embedded stories260K.
const modelUsage = "the model: stories260K (embedded, trained on TinyStories), a preset (tiny, demo, medium, …: dummy weights), or a GGUF file, llama2.c .bin or Hugging Face directory"

// weightDTypeUsage is the help of --dtype for the commands that load a model.
var weightDTypeUsage = "store weights as " + dtype.Names(dtype.DType.Scalar) + ", or quantized on load as " +
	dtype.Names(dtype.DType.Quantized) + " (default: as the source stores them)"

// algoUsage is the help of --algo for the commands that run or price a model.
var algoUsage = "force the all-reduce algorithm: auto, " + comm.AlgoNames(nil)

// algoHelp lists the all-reduce algorithms, one line each as comm describes them, for
// allreduce-bench's help.
func algoHelp() string {
	var b strings.Builder
	b.WriteString("all-reduce algorithms (--algo):")
	for _, a := range append(slices.Clone(comm.Algos), comm.HostAlgos...) {
		fmt.Fprintf(&b, "\n  %-9s %s", a, a.Doc())
	}
	return b.String()
}

// parseIntList reads a comma-separated list of distinct integers in [lo, hi] for flag
// name, such as --tp 1,2,4,8; the error names the flag and the bad entry. A repeat would
// measure or price a cell twice and draw a line back onto itself.
func parseIntList(name, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		switch {
		case err != nil || v < lo || v > hi:
			return nil, fmt.Errorf("--%s %q: %q is not an integer from %d to %d", name, s, f, lo, hi)
		case slices.Contains(out, v):
			return nil, fmt.Errorf("--%s %q: %d is listed twice", name, s, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// dtypeFlag is a flag naming an element type (f32, bf16 or f16) into *t; unset leaves it 0, which
// means the default of whatever reads it.
type dtypeFlag struct{ t *dtype.DType }

func (f dtypeFlag) String() string {
	if f.t == nil || *f.t == 0 {
		return ""
	}
	return f.t.String()
}

func (f dtypeFlag) Set(s string) error {
	t, err := dtype.ParseScalar(s)
	if err == nil {
		*f.t = t
	}
	return err
}

// printLoadNotes says once, on w, which file types were converted on load and where the
// TP split cut the blocks of a quantized type (models.Llama.LoadNotes).
func printLoadNotes(w io.Writer, m engine.Model) {
	for _, n := range m.LoadNotes() {
		fmt.Fprintf(w, "tpslice: TP=%d: %s\n", m.Group().World(), n)
	}
}

// fusedSelectFlags are --fused-select and --fused-tune-dir, which generate, serve and bench
// share: how --fused auto picks its variant per token count.
type fusedSelectFlags struct{ selector, dir string }

func (f *fusedSelectFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.selector, "fused-select", "comm", "how --fused auto picks: comm (the fused form of the all-reduce pick) or tuned (autotune the fused variants per token bucket on this node, once, cached)")
	fs.StringVar(&f.dir, "fused-tune-dir", "", "directory of the fused autotuning cache (default: tpslice in the user cache directory)")
}

// apply sets cfg's fused tuning directory for --fused-select tuned.
func (f *fusedSelectFlags) apply(cfg *engine.Config) error {
	switch f.selector {
	case "comm":
		return nil
	case "tuned":
	default:
		return fmt.Errorf("--fused-select: want comm or tuned, got %q", f.selector)
	}
	cfg.FusedTuneDir = f.dir
	if cfg.FusedTuneDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("--fused-tune-dir: no user cache directory (%w); give one", err)
		}
		cfg.FusedTuneDir = filepath.Join(dir, "tpslice")
	}
	return nil
}
