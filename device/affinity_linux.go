package device

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// pinThread locks the calling goroutine to its OS thread and restricts the thread to cpus
// (sched_setaffinity of thread 0, the caller). The caller never unlocks: Go ends a locked
// thread when its goroutine returns, so the pinned thread serves no other goroutine.
func pinThread(cpus []int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(0, &set)
}
