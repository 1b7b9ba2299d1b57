package comm

import "time"

// callClock is the clock of a rank's call records: the start and end of each call and the
// time block 0 sat waiting. A small call across processes is about a microsecond, and on
// this virtual machine's clock (kvm-clock) time.Now costs 50-80 ns, two clock reads
// (wall and monotonic). A reading here is one monotonic read, kept as nanoseconds since a
// base taken when the rank was made: building a time.Time of each reading (base.Add) was
// a quarter of the clock's cost on a small call's path, and nothing on that path needs
// one. Readers of a record make it a time.Time (at), whose wall time drifts from the
// system's only by what the system's clock was slewed since the base.
type callClock struct {
	base time.Time
	// reads counts the clock's readings, kernel side (the rank's stream): tests pin how
	// many a small call makes.
	reads uint64
}

func newCallClock() callClock { return callClock{base: time.Now()} }

// now returns the nanoseconds since the clock's base, with one monotonic clock read.
func (c *callClock) now() int64 {
	c.reads++
	return int64(time.Since(c.base))
}

// since returns the time elapsed since t, a reading of now, with one clock read.
func (c *callClock) since(t int64) time.Duration {
	c.reads++
	return time.Since(c.base) - time.Duration(t)
}

// timeAt returns reading ns of a clock whose base is base as a time.Time.
func timeAt(base time.Time, ns int64) time.Time { return base.Add(time.Duration(ns)) }
