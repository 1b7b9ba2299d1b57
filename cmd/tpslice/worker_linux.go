package main

import (
	"github.com/tpslice/tpslice/bench/collective"
	"github.com/tpslice/tpslice/bench/decode"
	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/executor"
)

// runWorker joins the driver and runs the job it names: the executor's own (ping),
// allreduce-bench's (collective.WorkerJob) and an engine rank's (engine.NewRankJob), which
// runs bench's trace of rank 0 (decode.NewRankProbe) when the driver asks.
func runWorker(cfg executor.WorkerConfig) error {
	jobs := executor.Jobs()
	jobs[collective.JobName] = collective.WorkerJob
	jobs[engine.RankJobName] = engine.NewRankJob(engine.RankProbes{decode.ProbeName: decode.NewRankProbe})
	return executor.RunWorker(cfg, jobs)
}
