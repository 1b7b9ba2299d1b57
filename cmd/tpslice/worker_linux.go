package main

import "github.com/tpslice/tpslice/executor"

// runWorker joins the driver and runs the job it names.
func runWorker(cfg executor.WorkerConfig) error { return executor.RunWorker(cfg, executor.Jobs()) }
