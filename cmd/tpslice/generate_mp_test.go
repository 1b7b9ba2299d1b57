//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/internal/testutil"
)

// generateIDs runs generate with args and --json and returns its output ids.
func generateIDs(t *testing.T, args ...string) []int32 {
	t.Helper()
	out, stderr, err := runCLI(t, append([]string{"generate", "--json", "--max-tokens", "16"}, args...)...)
	require.NoError(t, err, stderr)
	var rep generateReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.OutputIDs, 16)
	return rep.OutputIDs
}

// TestGenerateExecutorMP: generate --executor mp (a worker process per rank) prints the
// ids of --executor inproc, greedy and seeded, at TP 1, 2, 4 and 8, on the embedded model
// and on a quantized GGUF; and leaves no worker behind.
func TestGenerateExecutorMP(t *testing.T) {
	q4 := filepath.Clean("../../../shared/testdata/quant/tiny-Q4_K_M.gguf")
	degrees := []string{"1", "2", "4", "8"}
	if testing.Short() {
		degrees = []string{"2", "8"}
	}
	for _, model := range []string{"stories260K", q4} {
		t.Run(filepath.Base(model), func(t *testing.T) {
			if model == q4 {
				if _, err := os.Stat(q4); err != nil {
					t.Skipf("shared test data not available (%v); it lives in ../shared next to the repository", err)
				}
			}
			for _, tp := range degrees {
				for _, sampling := range [][]string{{"--temperature", "0"}, {"--temperature", "0.9", "--top-p", "0.9", "--seed", "5"}} {
					args := append([]string{"--model", model, "--tp", tp}, sampling...)
					want := generateIDs(t, append(args, "--executor", "inproc")...)
					got := generateIDs(t, append(args, "--executor", "mp")...)
					require.Equal(t, want, got, "TP %s %v", tp, sampling)
				}
			}
			kids, err := testutil.ChildPids()
			require.NoError(t, err)
			require.Empty(t, kids, "no worker process is left")
		})
	}
}

// TestGenerateExecutorMPWorkerDies: a worker that exits during generation (TPSLICE_FAULT
// kind:exit, its 40th collective) fails generate with its rank, pid and exit status, at
// once, and no worker process is left.
func TestGenerateExecutorMPWorkerDies(t *testing.T) {
	t.Setenv(comm.EnvFault, "rank:1,call:40,kind:exit")
	start := time.Now()
	_, _, err := runCLI(t, "generate", "--executor", "mp", "--tp", "2", "--max-tokens", "64", "--temperature", "0")
	require.Error(t, err)
	require.Less(t, time.Since(start), 30*time.Second)
	require.Regexp(t, regexp.MustCompile(`rank 1 \(pid \d+\) exited: exit status 86`), err.Error())
	require.Equal(t, 1, exitCode(err), fmt.Sprint(err))
	require.Eventually(t, func() bool {
		kids, err := testutil.ChildPids()
		return err == nil && len(kids) == 0
	}, 10*time.Second, 20*time.Millisecond, "no worker process is left")
}
