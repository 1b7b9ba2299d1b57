// Package trace records what the streams of a device.Node run and writes it as a timeline.
//
// A Recorder is a device.Tracer: install it with Node.SetTracer, run the work, turn tracing
// off (SetTracer(nil)) and write the kernels with WriteChrome in the Chrome trace-event JSON
// format that ui.perfetto.dev and chrome://tracing load. The timeline has one process per
// device and one thread per stream, so the comm stream's all-reduces show beside the compute
// stream's GEMMs they are meant to overlap (DESIGN.md, "SM budgets and overlap"):
//
//	rec := trace.NewRecorder(trace.Config{})
//	node.SetTracer(rec)
//	... launch, synchronize ...
//	node.SetTracer(nil)
//	err := rec.WriteChrome(f)
//
// WriteSVG draws the same kernels as an SVG timeline (RenderSVG draws any such trace file):
// a lane per stream, a bar per kernel coloured by its name, for pictures in documents.
//
// The recorder keeps at most Config.MaxEvents kernels and counts the rest as dropped, so a
// long run cannot exhaust memory.
package trace
