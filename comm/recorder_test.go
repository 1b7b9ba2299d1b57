package comm

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// TestRecorderOpenClose pins the record a call leaves: open writes every field in place,
// so a slot the ring reuses keeps nothing of the call recorderDepth earlier (its place of
// failure, error, end, wait); close marks a call that failed Failed with its error, and a
// later close does not overwrite the first failure. Times are kept as nanoseconds since
// the recorder's base and read back as that base's time.Time plus them.
func TestRecorderOpenClose(t *testing.T) {
	base := time.Unix(100, 0)
	r := Recorder{base: base}
	const start = int64(5 * time.Millisecond)
	boom := errors.New("boom")
	d := callDesc{op: "allreduce", algo: OneShot, t: dtype.F32, count: 256}
	r.open(&d, start, FaultStall)
	r.setWhere(0, "one-shot inputs staged")
	r.close(0, start+int64(time.Second), time.Millisecond, boom)
	r.close(0, start+int64(2*time.Second), 0, nil)
	last, ok := r.Last()
	require.True(t, ok)
	require.Equal(t, Record{Seq: 0, Op: "allreduce", Algo: OneShot, DType: dtype.F32, Count: 256, State: Failed,
		Start: base.Add(5 * time.Millisecond), End: base.Add(time.Second + 5*time.Millisecond), Wait: time.Millisecond,
		Where: "one-shot inputs staged", Err: boom, Fault: FaultStall}, last)

	for seq := uint64(1); seq <= recorderDepth; seq++ { // the last reuses seq 0's slot
		d.seq, d.count = seq, int(seq)
		r.open(&d, start, 0)
	}
	last, _ = r.Last()
	require.Equal(t, Record{Seq: recorderDepth, Op: "allreduce", Algo: OneShot, DType: dtype.F32, Count: recorderDepth,
		State: Running, Start: base.Add(5 * time.Millisecond)}, last, "a running call has no end")
	r.setWhere(0, "gone") // seq 0's slot holds another call now
	r.close(0, start, 0, boom)
	r.close(recorderDepth, start+int64(time.Second), 0, nil)
	last, _ = r.Last()
	require.Equal(t, Done, last.State)
	require.Empty(t, last.Where)
	require.Equal(t, base.Add(time.Second+5*time.Millisecond), last.End)
	require.Equal(t, int64(256*4+(1+recorderDepth)*recorderDepth/2*4), r.Stats()[0].Bytes)
}
