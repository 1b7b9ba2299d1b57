package main

import (
	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/executor"
)

// runWorker joins the driver and runs the job it names: the executor's own (ping) and
// allreduce-bench's (collective.WorkerJob).
func runWorker(cfg executor.WorkerConfig) error {
	jobs := executor.Jobs()
	jobs[collective.JobName] = collective.WorkerJob
	return executor.RunWorker(cfg, jobs)
}
