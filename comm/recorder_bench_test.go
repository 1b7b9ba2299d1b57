package comm

import (
	"testing"

	"github.com/tpslice/tpslice/dtype"
)

// BenchmarkRecorderOpenClose is what the flight recorder costs a call: its open at the
// call's start and its close at the end, with no reader.
func BenchmarkRecorderOpenClose(b *testing.B) {
	var r Recorder
	d := callDesc{op: "allreduce", algo: OneShot, t: dtype.F32, count: 256}
	for b.Loop() {
		r.open(&d, int64(d.seq), 0)
		r.close(d.seq, int64(d.seq)+1, 0, nil)
		d.seq++
	}
}
