//go:build linux

package device

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex operations a SharedBell uses (linux/futex.h). Neither has FUTEX_PRIVATE_FLAG:
// waiters and wakers are in different processes.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *addr holds val, until a wake, a signal or timeout (0: none). It
// returns nil whenever the caller should look again, and an error only for a futex that
// cannot work (a bad address, no futex support).
func futexWait(addr *uint32, val uint32, timeout time.Duration) error {
	var ts *unix.Timespec
	if timeout > 0 {
		t := unix.NsecToTimespec(timeout.Nanoseconds())
		ts = &t
	}
	_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val),
		uintptr(unsafe.Pointer(ts)), 0, 0)
	switch errno {
	case 0, unix.EAGAIN, unix.EINTR, unix.ETIMEDOUT:
		return nil
	}
	return fmt.Errorf("futex wait: %w", errno)
}

// futexWake wakes every waiter sleeping on addr, in any process.
func futexWake(addr *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, math.MaxInt32, 0, 0, 0)
}

// yieldCPU gives this thread's core to another runnable thread (sched_yield): the peer a
// shared bell's waiter polls for is another process, which runtime.Gosched, a yield to
// this process's goroutines, leaves waiting for the core when ranks outnumber the cores.
func yieldCPU() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
