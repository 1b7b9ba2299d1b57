package vec

// Accelerated reports whether this build's assembly kernels run on this CPU: the build is
// for amd64 without the noasm tag, and the CPU has AVX2 and F16C with the YMM state enabled
// by the OS (detected once, at package initialisation). Packages with assembly kernels of
// their own (layers) choose between assembly and portable Go on this one condition, so a
// noasm build or an older CPU switches every kernel at once.
func Accelerated() bool { return useAVX2 }
