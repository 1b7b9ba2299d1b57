//go:build linux

package engine

import (
	"fmt"
	"os"
	"testing"

	"github.com/tpslice/tpslice/executor"
)

// The process tests (procmodel_test.go) start worker processes: Launch starts this test
// binary with the worker subcommand, as it starts tpslice, and TestMain runs the engine's
// rank job then, as the subcommand does, with a probe that counts its rank's kernels
// (rankprobe_test.go). The worker of rank dieLoadingVar exits with
// status 3 once it joined, while the driver sends it the model to load.
const dieLoadingVar = "TPSLICE_TEST_DIE_LOADING"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == executor.WorkerCommand {
		cfg, err := executor.ParseWorkerArgs(os.Args[2:])
		if err == nil {
			job := NewRankJob(RankProbes{kernelCounterName: newKernelCounter})
			if os.Getenv(dieLoadingVar) == fmt.Sprint(cfg.Rank) {
				job = func(*executor.Worker) error { os.Exit(3); return nil }
			}
			err = executor.RunWorker(cfg, map[string]executor.Job{RankJobName: job})
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "test worker: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
