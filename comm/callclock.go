package comm

import "time"

// callClock is the clock of a rank's call records: the start and end of each call and the
// time block 0 sat waiting. A small call across processes is about a microsecond, and on
// this virtual machine's clock (kvm-clock) time.Now costs 50-80 ns, two clock reads
// (wall and monotonic); a reading here is one monotonic read added to a base taken when
// the rank was made, so the wall time it shows drifts from the system's only by what
// the system's clock was slewed since.
type callClock struct {
	base time.Time
	// reads counts the clock's readings, kernel side (the rank's stream): tests pin how
	// many a small call makes.
	reads uint64
}

func newCallClock() callClock { return callClock{base: time.Now()} }

// now returns the current time with one monotonic clock read.
func (c *callClock) now() time.Time {
	c.reads++
	return c.base.Add(time.Since(c.base))
}

// since returns the time elapsed since t, a reading of now, with one clock read.
func (c *callClock) since(t time.Time) time.Duration {
	c.reads++
	return time.Since(t)
}
