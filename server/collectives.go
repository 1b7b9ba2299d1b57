package server

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tpslice/tpslice/comm"
)

// collectives counts the collective calls of rank 0 (every rank issues the same ones) by
// op and algorithm, from its flight recorder. The recorder keeps only its latest calls, so
// the server reads it after every emitted token and at every scrape; calls that left the
// ring unread (over 256 between two reads: a long prefill of a deep model) are still
// counted, by their sequence numbers, under algorithm "unrecorded", without bytes.
type collectives struct {
	rec *comm.Recorder

	mu         sync.Mutex
	next       uint64 // the sequence number of the next call to count
	calls      map[collKey]float64
	bytes      map[collKey]float64
	unrecorded float64
}

type collKey struct{ op, algo string }

func newCollectives(rec *comm.Recorder) *collectives {
	return &collectives{rec: rec, calls: map[collKey]float64{}, bytes: map[collKey]float64{}}
}

// poll counts the calls recorded since the last poll.
func (c *collectives) poll() {
	last, ok := c.rec.Last()
	c.mu.Lock()
	fresh := ok && last.Seq >= c.next
	c.mu.Unlock()
	if !fresh {
		return
	}
	recs := c.rec.Records()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range recs {
		if r.Seq < c.next {
			continue
		}
		c.unrecorded += float64(r.Seq - c.next)
		k := collKey{r.Op, r.Algo.String()}
		c.calls[k]++
		c.bytes[k] += float64(r.Count * r.DType.Size())
		c.next = r.Seq + 1
	}
}

// collectiveMetrics exports the counts of the loaded engine's collectives.
type collectiveMetrics struct{ s *Server }

var (
	collCallsDesc = prometheus.NewDesc("tpslice_collective_calls_total",
		"Collective calls per rank by op (allreduce, allreduce+rmsnorm, allgather) and algorithm, read from rank 0's flight recorder; "+
			`algorithm "unrecorded" counts calls that left the recorder's ring unread.`, []string{"op", "algorithm"}, nil)
	collBytesDesc = prometheus.NewDesc("tpslice_collective_bytes_total",
		"Bytes of the collective calls' messages per rank (the size S each rank contributes) by op and algorithm.", []string{"op", "algorithm"}, nil)
)

// Describe implements prometheus.Collector.
func (m collectiveMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- collCallsDesc
	ch <- collBytesDesc
}

// Collect implements prometheus.Collector.
func (m collectiveMetrics) Collect(ch chan<- prometheus.Metric) {
	l := m.s.eng.Load()
	if l == nil {
		return
	}
	c := l.coll
	c.poll()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.calls {
		ch <- prometheus.MustNewConstMetric(collCallsDesc, prometheus.CounterValue, n, k.op, k.algo)
		ch <- prometheus.MustNewConstMetric(collBytesDesc, prometheus.CounterValue, c.bytes[k], k.op, k.algo)
	}
	if c.unrecorded > 0 {
		ch <- prometheus.MustNewConstMetric(collCallsDesc, prometheus.CounterValue, c.unrecorded, "unknown", "unrecorded")
	}
}
