package decode

import (
	"encoding/json"
	"fmt"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/tp"
)

// ProbeName is the probe (engine.RankProbe) that traces rank 0's kernels in its worker
// process under --executor mp: the CLI gives its workers' job NewRankProbe under this name.
const ProbeName = "decode-breakdown"

// NewRankProbe is the probe of rank of g, in a worker process: the collector bench
// installs on its own node for in-process ranks, answering with the row of the window the
// driver names (decodeRow), which is small where the kernels are many.
func NewRankProbe(g *tp.Group, rank int) engine.RankProbe {
	return &collector{dev: g.Device(rank), rec: g.Comm().Recorder(rank)}
}

// probeAnswer is rank 0's row of a window, and whether two whole steps of the batch ran in it.
type probeAnswer struct {
	Row Row
	OK  bool
}

// Answer is the row of the window question names, from the kernels traced and the rank's
// flight records (engine.RankProbe).
func (c *collector) Answer(question json.RawMessage) (any, error) {
	var w window
	if err := json.Unmarshal(question, &w); err != nil {
		return nil, fmt.Errorf("bench: probe %s: the question is not a window: %w", ProbeName, err)
	}
	row, ok := c.decodeRow(w, c.rec.Records())
	return probeAnswer{Row: row, OK: ok}, nil
}

// traceRank0 starts tracing rank 0's kernels for one measured run: on this process's node
// where the ranks are goroutines, else by the probe in rank 0's worker process. stop ends
// it and returns the run's row, whether two whole steps of the full batch ran, and (under
// --executor mp) the error of asking the worker; call it after every run, failed or not, so
// that the tracer is removed.
func traceRank0(e *engine.Engine) (stop func(b int, run batchRun) (Row, bool, error), err error) {
	if g := e.Model().Group(); g != nil {
		col := NewRankProbe(g, 0).(*collector)
		g.Node().SetTracer(col)
		return func(b int, run batchRun) (Row, bool, error) {
			g.Node().SetTracer(nil)
			row, ok := col.row(b, run, col.rec.Records())
			return row, ok, nil
		}, nil
	}
	stopProbe, err := e.ProbeRank(0, ProbeName)
	if err != nil {
		return nil, err
	}
	return func(b int, run batchRun) (Row, bool, error) {
		var a probeAnswer
		if err := stopProbe(window{Batch: b, From: run.from, To: run.to}, &a); err != nil {
			return Row{}, false, err
		}
		return withRun(a.Row, run), a.OK, nil
	}, nil
}
