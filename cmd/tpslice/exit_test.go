package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExitCodes: --help exits 0 for every command, mistakes in the command line exit 2
// with their error said once (no usage dump), other failures exit 1.
func TestExitCodes(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name+" --help", func(t *testing.T) {
			_, stderr, err := runCLI(t, c.name, "--help")
			require.Equal(t, 0, exitCode(err), "%v", err)
			require.Contains(t, stderr, "usage: tpslice "+c.name)
			require.Equal(t, 1, strings.Count(stderr, "usage:"), "the help's header is printed once:\n%s", stderr)
		})
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no command given"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"generate", "--bogus"}, 2, "generate: flag provided but not defined: -bogus (tpslice generate -h lists its flags)"},
		{[]string{"generate", "--tp"}, 2, "flag needs an argument: -tp"},
		{[]string{"generate", "--tp", "0"}, 2, "generate: --tp must be 1 to 8, got 0"},
		{[]string{"generate", "--tp", "16"}, 2, "generate: --tp must be 1 to 8, got 16"},
		{[]string{"serve", "--tp", "0"}, 2, "serve: --tp must be 1 to 8, got 0"},
		{[]string{"serve", "stray"}, 2, `serve: unexpected argument "stray"`},
		{[]string{"worker"}, 2, "worker: no --socket: a worker is started by a driver process (--executor mp), not by hand"},
		{[]string{"worker", "--socket", "/nowhere", "--job", "ping", "--rank", "3", "--world", "2"}, 2, "worker: --rank 3 of --world 2"},
		{[]string{"generate", "--executor", "mp", "--trace", "t.json"}, 2, "generate: --trace records every rank's kernels in this process; use --executor inproc"},
		{[]string{"allreduce-bench", "--executor", "mp", "--trace", "t.json"}, 1, "allreduce-bench: --trace: tracing records every rank's kernels in one process; use --executor inproc"},
		{[]string{"allreduce-bench", "--executor", "mp", "--select", "tuned"}, 1, "allreduce-bench: --select tuned autotunes with every rank in one process; under --executor mp give --select default or model:PROFILE"},
		{[]string{"allreduce-bench", "--executor", "mp", "--model", "h100-sxm"}, 1, "allreduce-bench: --model prices the collectives and runs no worker: drop --executor mp"},
		{[]string{"allreduce-bench", "--executor", "threads"}, 1, `allreduce-bench: --executor: want inproc or mp, got "threads"`},
		{[]string{"generate", "--model", "gpt-9"}, 1, `model "gpt-9" is not a file, a directory or a built-in model (stories260K, the default`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, stderr, err := runCLI(t, tc.args...)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, tc.code, exitCode(err), "%v", err)
			require.NotContains(t, stderr, tc.want, "the error is printed once, by main")
			require.NotContains(t, stderr, "Usage of", "no flag usage dump")
		})
	}
}

// TestWorkerIsHidden: the worker subcommand, which only a driver starts, is not in the help.
func TestWorkerIsHidden(t *testing.T) {
	_, stderr, err := runCLI(t, "--help")
	require.NoError(t, err)
	require.Contains(t, stderr, "allreduce-bench")
	require.NotContains(t, stderr, "worker")
}

func TestVersion(t *testing.T) {
	out, _, err := runCLI(t, "version")
	require.NoError(t, err)
	require.Regexp(t, `^tpslice \S+ \(.+\) go\S+ \w+/\w+\n$`, out)
}

// TestDebugEnv: a TPSLICE_DEBUG value the log does not take is a usage error naming it,
// and INFO writes the start-up log to stderr.
func TestDebugEnv(t *testing.T) {
	t.Setenv("TPSLICE_DEBUG", "LOUD")
	_, _, err := runCLI(t, "generate", "--tp", "1", "--max-tokens", "1", "--prompt", "Once")
	require.ErrorContains(t, err, `TPSLICE_DEBUG="LOUD"`)
	require.Equal(t, 2, exitCode(err))

	t.Setenv("TPSLICE_DEBUG", "INFO")
	t.Setenv("TPSLICE_DEBUG_SUBSYS", "INIT")
	_, stderr, err := runCLI(t, "generate", "--tp", "2", "--max-tokens", "1", "--prompt", "Once")
	require.NoError(t, err)
	require.Contains(t, stderr, "INFO INIT TP group of 2 ranks")
	require.NotContains(t, stderr, "INFO GRAPH")
}
