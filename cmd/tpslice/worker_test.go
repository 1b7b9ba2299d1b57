//go:build linux

package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/executor"
	"github.com/tpslice/tpslice/internal/stepwire"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models"
)

// asCLIVar makes the test binary the CLI itself (main), for a test that needs tpslice as a
// process of its own to signal (cliCommand).
const asCLIVar = "TPSLICE_TEST_AS_CLI"

// TestMain lets the test binary run as the CLI: executor.Launch starts it as a worker, and
// cliCommand as tpslice.
func TestMain(m *testing.M) {
	if os.Getenv(asCLIVar) != "" {
		main()
	}
	if len(os.Args) > 1 && os.Args[1] == executor.WorkerCommand {
		os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr)))
	}
	os.Exit(m.Run())
}

// TestWorkerSubcommand launches two workers through the CLI's hidden subcommand, as
// --executor mp will, and has them answer a step with the ping job.
func TestWorkerSubcommand(t *testing.T) {
	e, err := executor.Launch(context.Background(), executor.Config{Workers: 2, Job: "ping"})
	require.NoError(t, err)
	defer e.Close()
	step := stepwire.Step{Number: 9, Forward: models.Step{IDs: []int32{5, 6}, Candidates: 1, Sample: []int{1},
		Batch: layers.Batch{Pos: []int32{0, 1}, Seq: []int32{0, 0}, Tables: [][]int32{{0}}}}}
	require.NoError(t, e.Steps().Send(step))
	replies, err := e.Steps().Gather()
	require.NoError(t, err)
	for rank, r := range replies {
		require.Equal(t, stepwire.Reply{Number: 9, IDs: []int32{int32(rank), 2, 11, 1}}, r)
	}
	require.NoError(t, e.Close())
}
