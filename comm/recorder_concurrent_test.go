package comm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
)

// TestRecorderNeverReturnsATornRecord runs a writer that opens, places and closes calls
// back to back, every field a function of the call's sequence number, against readers of
// the last record, the last few and the totals: whatever they read must agree with itself,
// however the recorder keeps readers from a record being written (a mutex now; a seqlock
// was tried, see docs/benchmarks/processes.md). Run it with -race too.
func TestRecorderNeverReturnsATornRecord(t *testing.T) {
	calls := uint64(200_000)
	if raceDetector {
		calls = 20_000
	}
	base := time.Unix(1000, 0)
	r := &Recorder{base: base}
	ops := []string{"allreduce", "reducescatter", "allgather"}
	wheres := make([]string, 7)
	for i := range wheres {
		wheres[i] = fmt.Sprintf("place %d of a call", i)
	}
	errs := []error{nil, nil, errors.New("odd one out")}
	startOf := func(seq uint64) time.Time { return base.Add(time.Duration(10 * seq)) }

	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer done.Store(true)
		for seq := range calls {
			d := callDesc{seq: seq, op: ops[seq%3], algo: Algo(seq % 5), t: dtype.F32, count: int(seq)}
			r.open(&d, int64(10*seq), FaultKind(seq%3))
			r.setWhere(seq, wheres[seq%7])
			r.close(seq, int64(10*seq+5), time.Duration(seq), errs[seq%3])
		}
	}()

	check := func(rec Record) error {
		s := rec.Seq
		switch {
		case rec.Op != ops[s%3], rec.Algo != Algo(s%5), rec.Count != int(s), rec.Fault != FaultKind(s%3),
			!rec.Start.Equal(startOf(s)), rec.Where != "" && rec.Where != wheres[s%7]:
			return fmt.Errorf("torn record: %+v", rec)
		case rec.State == Running && (!rec.End.IsZero() || rec.Wait != 0 || rec.Err != nil):
			return fmt.Errorf("running record with an end: %+v", rec)
		case rec.State != Running && (!rec.End.Equal(startOf(s).Add(5)) || rec.Wait != time.Duration(s) ||
			rec.Err != errs[s%3] || (rec.State == Failed) != (rec.Err != nil)):
			return fmt.Errorf("torn end: %+v", rec)
		}
		return nil
	}
	reads := make([]int, 3)
	read := func(i int, fn func() error) {
		defer wg.Done()
		for !done.Load() {
			if err := fn(); err != nil {
				t.Error(err)
				return
			}
			reads[i]++
		}
	}
	wg.Add(3)
	go read(0, func() error {
		if rec, ok := r.Last(); ok {
			return check(rec)
		}
		return nil
	})
	go read(1, func() error {
		recs := r.tail(4)
		for i, rec := range recs {
			if err := check(rec); err != nil {
				return err
			}
			if i > 0 && rec.Seq <= recs[i-1].Seq {
				return fmt.Errorf("records out of order: %d after %d", rec.Seq, recs[i-1].Seq)
			}
		}
		return nil
	})
	go read(2, func() error {
		var calls, bytes int64
		for _, st := range r.Stats() {
			calls, bytes = calls+st.Calls, bytes+st.Bytes
		}
		if bytes != 4*calls*(calls-1)/2 { // seq 0 … calls-1, count seq each, 4 bytes an element
			return fmt.Errorf("totals of %d calls hold %d bytes, want %d", calls, bytes, 4*calls*(calls-1)/2)
		}
		return nil
	})
	wg.Wait()
	last, ok := r.Last()
	require.True(t, ok)
	require.NoError(t, check(last))
	require.Equal(t, calls-1, last.Seq)
	t.Logf("reads while writing: last %d, tail %d, totals %d", reads[0], reads[1], reads[2])
}
