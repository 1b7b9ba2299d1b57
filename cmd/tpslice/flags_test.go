package main

import (
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
	"github.com/tpslice/tpslice/topo"
)

// parseEngineFlags parses args with the engine flags, and the runtime ones if runtime.
func parseEngineFlags(t *testing.T, runtime bool, args ...string) (*engineFlags, error) {
	t.Helper()
	var ef engineFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef.register(fs)
	if runtime {
		ef.registerRuntime(fs)
	}
	return &ef, fs.Parse(args)
}

// TestEngineFlagsConfig: every engine flag reaches engine.Config through config, and a
// bad one is refused naming it.
func TestEngineFlagsConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tune")
	ef, err := parseEngineFlags(t, true, "--model", "tiny", "--dtype", "q8_0", "--kv-dtype", "bf16", "--fused", "twoshot",
		"--algo", "oneshot", "--allreduce-dtype", "bf16", "--eager", "--fused-select", "tuned", "--fused-tune-dir", dir,
		"--tp", "2", "--sms", "3", "--topology", "pcie", "--overlap", "--comm-sms", "2", "--cpu-affinity", "0-1|1")
	require.NoError(t, err)
	cfg, err := ef.config()
	require.NoError(t, err)
	require.Equal(t, "tiny", cfg.Model)
	require.Equal(t, dtype.Q8_0, cfg.WeightDType)
	require.Equal(t, dtype.BF16, cfg.KVDType)
	require.Equal(t, fused.TwoShot, cfg.Fused)
	require.Equal(t, comm.OneShot, cfg.Algo)
	require.Equal(t, comm.WireBF16, cfg.AllReduceWire)
	require.Equal(t, dir, cfg.FusedTuneDir)
	require.True(t, cfg.Eager)
	require.True(t, cfg.Overlap)
	require.Equal(t, 2, cfg.TP)
	require.Equal(t, 3, cfg.SMs)
	require.Equal(t, 2, cfg.CommSMs)
	require.Equal(t, "pcie", ef.topology, "resolveFabric reads it")
	require.Equal(t, []topo.CPUList{{0, 1}, {1}}, cfg.CPUAffinity.Lists)
	require.True(t, cfg.BF16Dot, "bf16 weights multiply as llama.cpp's by default")
	ef, err = parseEngineFlags(t, false, "--bf16-dot=false")
	require.NoError(t, err)
	cfg, err = ef.config()
	require.NoError(t, err)
	require.False(t, cfg.BF16Dot)
	_, err = parseEngineFlags(t, true, "--cpu-affinity", "0|1-")
	require.ErrorContains(t, err, `invalid value "0|1-" for flag -cpu-affinity: rank 1: CPU list "1-"`)

	for _, tc := range []struct {
		args  []string
		want  string
		usage bool // exits 2
	}{
		{[]string{"--tp", "9"}, "--tp must be 1 to 8, got 9", true},
		{[]string{"--dtype", "f8"}, "--dtype: ", false},
		{[]string{"--fused", "maybe"}, "--fused: ", false},
		{[]string{"--algo", "telepathy"}, "--algo: ", false},
		{[]string{"--fused-select", "fastest"}, `--fused-select: want comm or tuned, got "fastest"`, false},
		{[]string{"--algo", "ring", "--allreduce-dtype", "fp8"}, "--allreduce-dtype fp8: --algo ring does not run it", false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ef, err := parseEngineFlags(t, true, tc.args...)
			require.NoError(t, err)
			_, err = ef.config()
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, tc.usage, errors.As(err, new(usageError)))
		})
	}

	// bench takes --tp as a list of its own: without the runtime flags TP is not checked.
	ef, err = parseEngineFlags(t, false)
	require.NoError(t, err)
	_, err = ef.config()
	require.NoError(t, err)
}
