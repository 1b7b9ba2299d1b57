package device

import "sync/atomic"

// LaunchAndWait launches k and waits until it, and everything enqueued on s before it, has
// finished, then returns the stream's sticky error: what Launch followed by Synchronize
// does, and how a CUDA backend implements it (cudaLaunchKernel, cudaStreamSynchronize).
// It is for a caller that blocks on the kernel anyway, as MPI_Allreduce or an NCCL call
// followed by cudaStreamSynchronize does, never for one that overlaps the kernel with
// other host work.
//
// Where the stream is idle (every operation enqueued on it has finished and it is not
// capturing), the calling goroutine runs the kernel itself, a host-executed launch,
// instead of handing it to the stream's goroutine and sleeping until that one is done:
// no channel operation and no goroutine hop, where a small collective's launch and wait
// cost two of each. Nothing else of the stream's semantics changes: the blocks take the
// device's SMs within the stream's budget (those past the first on the stream's SM
// helpers), the prologue, epilogue, tracer span and sticky error are the stream's, and
// work that another goroutine enqueues on s meanwhile runs after the kernel. Where the
// stream is not idle, or is capturing, it is Launch then Synchronize (under capture that
// fails as Synchronize does). HostLaunches counts the kernels run on the host.
func (s *Stream) LaunchAndWait(k Kernel) error {
	if err := s.checkKernel(&k); err != nil {
		return err
	}
	if s.runOnHost(&k) {
		return s.Err()
	}
	if err := s.Launch(k); err != nil {
		return err
	}
	return s.Synchronize()
}

// HostLaunches returns how many kernels LaunchAndWait ran on the calling goroutine.
func (s *Stream) HostLaunches() uint64 { return atomic.LoadUint64(&s.hostLaunches) }

// runOnHost runs k on the calling goroutine if the stream is idle, and reports whether it
// did. The order of the checks is what keeps stream order and closing safe: onHost is set
// before pending and closed are read. Enqueue counts an operation in pending before the
// stream's goroutine can receive it, so either this run sees the operation and backs off,
// or the stream's goroutine sees onHost (awaitHostRun) and lets the kernel finish first.
// Closing sets closed before it reads onHost, so either this run sees closed, or closing
// waits for the kernel as it waits for queued work; no lock is taken, where the stream's
// RWMutex cost a call two locked instructions more.
func (s *Stream) runOnHost(k *Kernel) bool {
	if s.capturing.Load() || !s.onHost.CompareAndSwap(false, true) {
		return false
	}
	ran := !s.closed.Load() && s.pending.Load() == 0
	if ran {
		s.execute(k)
		StoreRelease64(&s.hostLaunches, s.hostLaunches+1) // one writer: the holder of onHost
	}
	s.onHost.Store(false)
	s.hostDone.ring()
	return ran
}

// awaitHostRun returns once no host goroutine runs a kernel of the stream; the stream's
// goroutine calls it before each operation.
func (s *Stream) awaitHostRun() {
	if s.onHost.Load() {
		s.hostDone.wait(func() bool { return !s.onHost.Load() })
	}
}
