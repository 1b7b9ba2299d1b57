package device

import "time"

// Tracer receives every kernel the streams of a node run or skip, as a profiler
// (Nsight Systems, the PyTorch profiler) sees GPU activity. See Node.SetTracer.
type Tracer interface {
	// KernelDone reports one kernel after its blocks finished (or after it was skipped), on
	// the goroutine of the stream that ran it and before the kernel's Epilogue runs. Streams
	// call it concurrently; it must be safe for that and return promptly, since the stream
	// waits for it.
	KernelDone(span KernelSpan)
}

// KernelSpan is one kernel as its stream ran it.
type KernelSpan struct {
	// Stream ran (or skipped) the kernel; its device, name and SM budget say where.
	Stream *Stream
	// Kernel is the kernel as launched (Name, Grid, Detail).
	Kernel Kernel
	// Start and End bound the kernel on the stream: its prologue and blocks, not its
	// epilogue. A skipped kernel has End ≈ Start.
	Start, End time.Time
	// Err is the kernel's error: nil when it succeeded; when Skipped, the stream's earlier
	// error that made it skip.
	Err error
	// Skipped reports that the kernel did not run because the stream failed earlier.
	Skipped bool
}

// tracerRef boxes a Tracer so that the node can swap it with one atomic pointer.
type tracerRef struct{ t Tracer }

// SetTracer installs t to receive every kernel that the node's streams run from now on;
// nil turns tracing off. With tracing off a kernel pays one atomic load for it. A stream
// that started a kernel before SetTracer returned still reports that kernel to the tracer
// installed when it started, so a tracer must accept reports after it was replaced.
func (n *Node) SetTracer(t Tracer) {
	if t == nil {
		n.tracer.Store(nil)
		return
	}
	n.tracer.Store(&tracerRef{t: t})
}

// Tracer returns the installed tracer, nil when tracing is off.
func (n *Node) Tracer() Tracer {
	if ref := n.tracer.Load(); ref != nil {
		return ref.t
	}
	return nil
}

// kernelTrace is a kernel being traced: the tracer installed when it started (nil: off).
type kernelTrace struct {
	t     Tracer
	start time.Time
}

// traceKernel starts tracing a kernel on s: one atomic load when tracing is off.
func (s *Stream) traceKernel() kernelTrace {
	ref := s.dev.node.tracer.Load()
	if ref == nil {
		return kernelTrace{}
	}
	return kernelTrace{t: ref.t, start: time.Now()}
}

// done reports the kernel to the tracer it started under, if any.
func (kt kernelTrace) done(s *Stream, k *Kernel, err error, skipped bool) {
	if kt.t == nil {
		return
	}
	kt.t.KernelDone(KernelSpan{Stream: s, Kernel: *k, Start: kt.start, End: time.Now(), Err: err, Skipped: skipped})
}
