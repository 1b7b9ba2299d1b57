package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/models/stories260k"
	"github.com/tpslice/tpslice/topo"
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

// fusedUsage is the help of --fused, its names from fused.Variants.
var fusedUsage = "all-reduce + RMSNorm: " + orList(append([]fused.Variant{fused.Auto}, fused.Variants...)) +
	" (reduce-scatter + norm + all-gather)"

// orList writes vs as "a, b or c".
func orList[T fmt.Stringer](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// collectiveFlags are --algo and --fused, which the engine commands run and plan prices.
type collectiveFlags struct{ algo, fused string }

func (f *collectiveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.fused, "fused", "auto", fusedUsage)
	fs.StringVar(&f.algo, "algo", "auto", algoUsage)
}

// parse reads the algorithm and the fused variant; an error names the flag.
func (f *collectiveFlags) parse() (comm.Algo, fused.Variant, error) {
	v, err := fused.ParseVariant(f.fused)
	if err != nil {
		return 0, 0, fmt.Errorf("--fused: %w", err)
	}
	a, err := comm.ParseAlgo(f.algo)
	if err != nil {
		return 0, 0, fmt.Errorf("--algo: %w", err)
	}
	return a, v, nil
}

// engineFlags are the flags that set an engine.Config, registered here once for the
// commands that run an engine (generate, serve, bench), so that their names, defaults
// and help agree.
type engineFlags struct {
	cfg         engine.Config
	dtype       string
	topology    string
	collectives collectiveFlags
	fusedSelect fusedSelectFlags
	executor    string
	runtime     bool // registerRuntime ran: --tp is one degree
	// seedAlso says what else a command seeds with --seed besides a preset's dummy
	// weights ("the prompts", "the sampling"); empty: only the weights.
	seedAlso string
}

// register adds the flags of every engine command: --model, --dtype, --kv-dtype,
// --fused, --fused-select, --fused-tune-dir, --algo, --allreduce-dtype, --eager, --seed,
// --collective-timeout (its default f.cfg.CollectiveTimeout where set, else comm's),
// --executor and --cpu-affinity.
func (f *engineFlags) register(fs *flag.FlagSet) {
	executorFlag(fs, &f.executor)
	fs.StringVar(&f.cfg.Model, "model", stories260k.Name, modelUsage)
	fs.StringVar(&f.dtype, "dtype", "", weightDTypeUsage)
	fs.Var(dtypeFlag{&f.cfg.KVDType}, "kv-dtype", "store the KV cache as f32 (default), bf16 or f16 (half the memory)")
	f.collectives.register(fs)
	f.fusedSelect.register(fs)
	addWireFlag(fs, &f.cfg.AllReduceWire)
	fs.BoolVar(&f.cfg.Eager, "eager", false, "launch every decode step from the host instead of replaying captured graphs")
	fs.BoolVar(&f.cfg.BF16Dot, "bf16-dot", true, "multiply bf16 weights as llama.cpp does: activations rounded to bf16, VDPBF16PS where the CPU has AVX512_BF16, else emulated bit for bit with AVX2; false keeps f32 activations against widened weights (logits nearer float64's, prompts about 0.6x as fast)")
	seedUsage := "seed of a preset's dummy weights"
	if f.seedAlso != "" {
		seedUsage = "seed of " + f.seedAlso + " and of a preset's dummy weights"
	}
	fs.Uint64Var(&f.cfg.Seed, "seed", 0, seedUsage)
	timeout := cmp.Or(f.cfg.CollectiveTimeout, comm.DefaultTimeout)
	fs.DurationVar(&f.cfg.CollectiveTimeout, "collective-timeout", timeout, "how long a rank waits for its peers in a collective before the step fails (serve then rebuilds the TP group)")
	cpuAffinityFlag(fs, &f.cfg.CPUAffinity)
}

// cpuAffinityFlag adds --cpu-affinity, where the ranks run (topo.ParseAffinity).
func cpuAffinityFlag(fs *flag.FlagSet, a *topo.Affinity) {
	fs.Var(affinityFlag{a}, "cpu-affinity", "where the ranks run: auto (ranks spread over the NUMA nodes in contiguous blocks, each rank's SM workers pinned to its node's CPUs and its weights first touched there; nothing pinned on a machine of one node), none, or a CPU list per rank separated by '|', e.g. 0-3|4-7")
}

// affinityFlag is --cpu-affinity into *a.
type affinityFlag struct{ a *topo.Affinity }

func (f affinityFlag) String() string {
	if f.a == nil {
		return topo.Auto
	}
	return f.a.String()
}

func (f affinityFlag) Set(s string) error {
	a, err := topo.ParseAffinity(s)
	if err == nil {
		*f.a = a
	}
	return err
}

// The values of --executor: ranks as goroutines of this process, or a worker process per
// rank (vLLM's names).
const (
	executorInProcess = "inproc"
	executorProcesses = "mp"
)

// executorFlag adds --executor, how the ranks run, for the engine commands and
// allreduce-bench.
func executorFlag(fs *flag.FlagSet, kind *string) {
	fs.StringVar(kind, "executor", executorInProcess, "how the ranks run: inproc (goroutines of this process) or mp (a worker process per rank)")
}

// validExecutor refuses an --executor that is neither inproc nor mp.
func validExecutor(kind string) error {
	switch kind {
	case executorInProcess, executorProcesses:
		return nil
	}
	return fmt.Errorf("--executor: want %s or %s, got %q", executorInProcess, executorProcesses, kind)
}

// smsFlag adds --sms, the SMs (worker goroutines) of every device.
func smsFlag(fs *flag.FlagSet, sms *int) {
	fs.IntVar(sms, "sms", 0, "SMs per device (0: GOMAXPROCS)")
}

// topologyFlag adds --topology, the node whose fabric the ranks run on.
func topologyFlag(fs *flag.FlagSet, spec *string) {
	fs.StringVar(spec, "topology", topo.Auto, topologyUsage())
}

// registerRuntime adds the flags of a command that runs one TP group (generate, serve):
// --tp, --sms, --topology, --overlap and --comm-sms. Its topology is resolveFabric's.
func (f *engineFlags) registerRuntime(fs *flag.FlagSet) {
	f.runtime = true
	fs.IntVar(&f.cfg.TP, "tp", 1, "tensor-parallel degree, 1 to 8")
	smsFlag(fs, &f.cfg.SMs)
	topologyFlag(fs, &f.topology)
	fs.BoolVar(&f.cfg.Overlap, "overlap", false, "run steps of 2+ tokens as two micro-batches, all-reduces on a comm stream overlapping compute")
	fs.IntVar(&f.cfg.CommSMs, "comm-sms", 1, "SMs of the comm stream with --overlap (the compute stream gets the rest)")
}

// config checks the flags and returns the engine's config (without its fabric: see
// resolveFabric); an error names the flag, and a --tp out of range is a usageError.
func (f *engineFlags) config() (engine.Config, error) {
	cfg := f.cfg
	if f.runtime && (cfg.TP < 1 || cfg.TP > device.MaxDevices) {
		return cfg, usageError{fmt.Errorf("--tp must be 1 to %d, got %d", device.MaxDevices, cfg.TP)}
	}
	if err := validExecutor(f.executor); err != nil {
		return cfg, err
	}
	cfg.Processes = f.executor == executorProcesses
	var err error
	if f.dtype != "" {
		if cfg.WeightDType, err = dtype.Parse(f.dtype); err != nil {
			return cfg, fmt.Errorf("--dtype: %w", err)
		}
	}
	if cfg.Algo, cfg.Fused, err = f.collectives.parse(); err != nil {
		return cfg, err
	}
	if err := f.fusedSelect.apply(&cfg); err != nil {
		return cfg, err
	}
	return cfg, checkWire(cfg.AllReduceWire, cfg.Algo, cfg.Fused)
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
		fmt.Fprintf(w, "tpslice: TP=%d: %s\n", len(m.WeightBytes()), n)
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
