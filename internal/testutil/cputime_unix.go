//go:build unix

package testutil

import (
	"syscall"
	"testing"
	"time"
)

// CPUSeconds is the CPU time this process has used, user and system: on a machine shared
// with other work, a benchmark's bytes or tokens over it move far less than over the wall
// clock.
func CPUSeconds(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
