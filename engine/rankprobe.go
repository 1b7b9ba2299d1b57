package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/tp"
)

// RankProbe watches one rank in its worker process while the driver asks (Engine.ProbeRank),
// as a profiler attached to one GPU's process would: the worker installs it as its node's
// tracer, and when the driver ends the probe it removes it and sends back its Answer.
// bench's kernel breakdown of rank 0 is one (bench/decode.NewRankProbe).
type RankProbe interface {
	device.Tracer
	// Answer is what the probe saw, as the driver's question (JSON) asks for it; it goes
	// back as JSON on the worker's control connection, so it must stay small (a summary,
	// not every kernel: ipc.MaxBody bytes at most).
	Answer(question json.RawMessage) (any, error)
}

// RankProbes are the probes a worker process can run, by name: each makes the probe of
// its rank of g (the worker's own group). The CLI gives its workers' job the probes of
// the commands above the engine (NewRankJob).
type RankProbes map[string]func(g *tp.Group, rank int) RankProbe

// rankProber is a Model whose ranks run in worker processes, which can probe them.
type rankProber interface {
	probeRank(rank int, name string) (stop func(question, answer any) error, err error)
}

// ProbeRank starts the probe called name on rank's worker process; its kernels from the
// next step on reach the probe. stop removes it and decodes its answer to question into
// answer; call it once the steps to watch are done. Only for ranks in worker processes
// (Config.Processes): in-process ranks are watched on this process's own node
// (Model().Group().Node().SetTracer).
func (e *Engine) ProbeRank(rank int, name string) (stop func(question, answer any) error, err error) {
	p, ok := e.Model().(rankProber)
	if !ok {
		return nil, errors.New("engine: probing a rank needs worker processes (Config.Processes); in-process ranks trace on Model().Group().Node()")
	}
	if rank < 0 || rank >= e.cfg.TP {
		return nil, fmt.Errorf("engine: probe %q: rank %d of %d", name, rank, e.cfg.TP)
	}
	return p.probeRank(rank, name)
}
