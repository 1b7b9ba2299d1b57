package main

import (
	"io"

	"github.com/tpslice/tpslice/executor"
)

// worker is the hidden subcommand a driver (--executor mp) starts once per rank, its
// command line written by executor.Launch; it is not listed in the help, and refuses to run
// without the driver's socket.
func worker(args []string, _, _ io.Writer) error {
	cfg, err := executor.ParseWorkerArgs(args)
	if err != nil {
		return usageError{err}
	}
	return runWorker(cfg)
}
