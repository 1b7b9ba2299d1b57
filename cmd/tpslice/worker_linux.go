package main

import (
	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/executor"
)

// runWorker joins the driver and runs the job it names: the executor's own (ping),
// allreduce-bench's (collective.WorkerJob) and an engine rank's (engine.RankJob).
func runWorker(cfg executor.WorkerConfig) error {
	jobs := executor.Jobs()
	jobs[collective.JobName] = collective.WorkerJob
	jobs[engine.RankJobName] = engine.RankJob
	return executor.RunWorker(cfg, jobs)
}
