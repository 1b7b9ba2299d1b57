// Command tpslice is the one CLI of tpslice: the tensor-parallel inference engine slice.
//
//	tpslice allreduce-bench [flags]   the all-reduce family (and reduce-scatter, all-gather), nccl-tests style
//	tpslice bench [flags]             decode latency per TP degree and batch, and where it goes
//	tpslice plan [flags]              the same predicted on a GPU node (H100, H200, A100, B200, L40S)
//	tpslice topo [flags]              the GPUs and their links, nvidia-smi topo -m style (NVML or simulated)
//	tpslice numa [flags]              what a rank per NUMA node buys decode on a two-socket server, predicted
//	tpslice chat-template [flags]     the prompt a chat template renders messages to, as Hugging Face does
//	tpslice version                   the version and commit the binary was built from
//
// Exit status: 0 on success and for -h/--help, 2 for a mistake in the command line, 1 for
// any other failure; errors are printed once, on stderr.
//
// Run "tpslice COMMAND -h" for a command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tpslice/tpslice/executor"
)

// command is one subcommand: it parses its own flags from args and writes its report to
// stdout, progress and notes to stderr.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"generate", "generate text with a model sharded over TP ranks", generate},
		{"serve", "serve an OpenAI-compatible HTTP API (completions, chat, SSE streaming, metrics)", serve},
		{"bench", "measure decode latency per TP degree and batch size, with its breakdown by op class", benchCmd},
		{"allreduce-bench", "measure (or model) every all-reduce (--op: reduce-scatter, all-gather) algorithm across message sizes", allreduceBench},
		{"bench-serve", "load-test a running server (vLLM benchmark_serving style): throughput, TTFT, TPOT, ITL", benchServe},
		{"plan", "predict decode latency per TP degree on a GPU node (H100, H200, A100, B200, L40S) from the engine's decode graph", plan},
		{"membw", "measure this machine's memory read bandwidth (the decode roofline)", membw},
		{"numa", "predict what a rank per NUMA node buys decode on a two-socket CPU server (weight reads per placement)", numaCmd},
		{"tokenize", "print the token ids and pieces of a text (GGUF or tokenizer.json vocab)", tokenize},
		{"chat-template", "print the prompt a model's (or a file's) chat template renders messages to, as Hugging Face renders it", chatTemplate},
		{"topo", "print the GPU topology (NVML, or simulated without a driver) and the fabric and profile it maps to", topoCmd},
		{"version", "print the version, commit and Go toolchain the binary was built from", version},
	}
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "tpslice:", err)
	}
	os.Exit(exitCode(err))
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return usageError{errors.New("no command given")}
		}
		return nil
	}
	if len(args) > 1 && args[0] == "bench" && args[1] == "serve" { // "tpslice bench serve" is bench-serve
		args = append([]string{"bench-serve"}, args[2:]...)
	}
	if args[0] == executor.WorkerCommand { // hidden: only a driver starts it
		return worker(args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	usage(stderr)
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tpslice COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
}
