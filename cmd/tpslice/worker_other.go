//go:build !linux

package main

import (
	"errors"

	"github.com/tpslice/tpslice/executor"
)

// runWorker refuses: worker processes need Linux (pidfds, SO_PEERCRED, memfds).
func runWorker(executor.WorkerConfig) error {
	return errors.New("worker: process ranks (--executor mp) run on Linux only")
}
