package decode

import (
	"slices"
	"sync"
	"time"

	"github.com/tpslice/tpslice/bench"
	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
)

// collector is a device.Tracer that keeps rank 0's kernels: what one rank spends a step on.
// Under --executor mp it runs in rank 0's worker process, as the probe NewRankProbe makes.
type collector struct {
	dev   *device.Device
	rec   *comm.Recorder // the rank's flight records: its waits on peers
	mu    sync.Mutex
	spans []kspan
}

type kspan struct {
	key, name  string
	step       bool // an embedding kernel: the first kernel of every forward step
	collective bool
	start, end time.Time
}

// KernelDone keeps rank 0's kernels (device.Tracer).
func (c *collector) KernelDone(s device.KernelSpan) {
	if s.Stream.Device() != c.dev || s.Skipped {
		return
	}
	w := s.Kernel.Work
	ks := kspan{key: string(w.Class), name: s.Kernel.Name, step: w.Class == device.ClassEmbedding, start: s.Start, end: s.End}
	switch {
	case w.Class == device.ClassCollective:
		ks.key, ks.collective = string(w.Op)+"."+w.Algo.String(), true
	case w.Class == "":
		ks.key = "other"
	}
	c.mu.Lock()
	c.spans = append(c.spans, ks)
	c.mu.Unlock()
}

// row turns the kernels traced while batch b ran into its row (all but TP and what the
// driver counts: E2ETokensPerS, OutputTokens), or reports that fewer than two whole steps
// of the full batch ran.
func (c *collector) row(b int, run batchRun, records []comm.Record) (Row, bool) {
	row, ok := c.decodeRow(window{Batch: b, From: run.from, To: run.to}, records)
	return withRun(row, run), ok
}

// window is the part of a measured run of Batch requests in which the whole batch
// decoded: from its last first token to its first last one.
type window struct {
	Batch    int
	From, To time.Time
}

// withRun adds to row, made from rank 0's kernels, what the run itself measured: TTFT and
// the prefill rate.
func withRun(row Row, run batchRun) Row {
	row.TTFTMs = run.ttftMs
	row.PromptTokensPerS = float64(run.promptTokens) / run.prefill.Seconds()
	return row
}

// decodeRow is the row of the kernels traced in w: the per-token latency, throughput and
// breakdown of rank 0's decode steps. A step runs from one embedding kernel (the first
// kernel of every forward step) to the next; it counts the steps that start between w.From
// and w.To but the first, since the step right after the last prefill may still run
// without the newcomers.
func (c *collector) decodeRow(w window, records []comm.Record) (Row, bool) {
	c.mu.Lock()
	spans := slices.Clone(c.spans)
	c.mu.Unlock()
	slices.SortFunc(spans, func(a, b kspan) int { return a.start.Compare(b.start) })
	var steps []time.Time
	for _, s := range spans {
		if s.step && !s.start.Before(w.From) && !s.start.After(w.To) {
			steps = append(steps, s.start)
		}
	}
	if len(steps) < 3 {
		return Row{}, false
	}
	steps = steps[1:]
	from, to, n := steps[0], steps[len(steps)-1], float64(len(steps)-1)
	var gaps []float64
	for k := 1; k < len(steps); k++ {
		gaps = append(gaps, bench.Ms(steps[k].Sub(steps[k-1])))
	}
	bd := map[string]float64{}
	for _, k := range Classes() {
		bd[k] = 0
	}
	var kernels, collective float64
	sites := map[string]string{}
	after := ""
	for _, s := range spans {
		if s.start.Before(from) || !s.start.Before(to) {
			continue
		}
		if s.collective {
			sites["after "+after] = s.key
		} else {
			after = s.name
		}
		d := bench.Ms(s.end.Sub(s.start)) / n
		bd[s.key] += d
		kernels += d
		if s.collective {
			collective += d
		}
	}
	step := bench.Ms(to.Sub(from)) / n
	// Rank 0's kernels run one after another on its compute stream, so they fit in the step;
	// the clamp only matters if a comm stream overlapped them.
	bd[HostOverhead] = max(0, step-kernels)
	lat := bench.Stats(gaps)
	return Row{Batch: w.Batch, P50Ms: lat.P50, P99Ms: lat.P99,
		TokensPerS: float64(w.Batch) / step * 1e3, CommShare: collective / step, CommWaitShare: collective / step * waitFraction(records, from, to),
		Breakdown: bd, AllReduce: sites}, true
}

// waitFraction is the share of rank 0's collective time in [from, to) that it spent blocked
// on its peers, from comm's flight records (the ring keeps the most recent calls, so it is
// a ratio over those the window still holds, not a sum).
func waitFraction(records []comm.Record, from, to time.Time) float64 {
	var wait, total time.Duration
	for _, r := range records {
		if r.State == comm.Done && !r.Start.Before(from) && r.Start.Before(to) {
			wait, total = wait+r.Wait, total+r.End.Sub(r.Start)
		}
	}
	if total <= 0 {
		return 0
	}
	return min(1, float64(wait)/float64(total))
}
