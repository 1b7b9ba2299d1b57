//go:build linux

package server

import (
	"fmt"
	"os"
	"testing"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/executor"
)

// TestMain lets the test binary be a worker process: an engine with Processes (the CLI's
// --executor mp) starts it with the worker subcommand, as it starts tpslice, and it runs
// the engine's rank job then.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == executor.WorkerCommand {
		cfg, err := executor.ParseWorkerArgs(os.Args[2:])
		if err == nil {
			err = executor.RunWorker(cfg, map[string]executor.Job{engine.RankJobName: engine.RankJob})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "test worker: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
