//go:build !linux

package device

import (
	"runtime"
	"time"
)

// futexWait stands in for a futex off Linux, where no memory is shared between processes
// (AllocShareable fails): it naps briefly and lets the caller look again.
func futexWait(_ *uint32, _ uint32, timeout time.Duration) error {
	const nap = 50 * time.Microsecond
	if timeout <= 0 || timeout > nap {
		timeout = nap
	}
	time.Sleep(timeout)
	return nil
}

func futexWake(*uint32) {}

// yieldCPU yields to this process's goroutines: off Linux no peer is another process.
func yieldCPU() { runtime.Gosched() }
