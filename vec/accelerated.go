package vec

// Accelerated reports whether this build's assembly kernels run on this CPU: the build is
// for amd64 without the noasm tag, and the CPU has AVX2, F16C and FMA with the YMM state enabled
// by the OS (detected once, at package initialisation). Packages with assembly kernels of
// their own (layers) choose between assembly and portable Go on this one condition, so a
// noasm build or an older CPU switches every kernel at once.
func Accelerated() bool { return useAVX2 }

// AcceleratedAVX512 reports whether, beyond Accelerated, the CPU runs AVX-512 F, BW, VL and
// VNNI with the ZMM state enabled by the OS (detected once): packages choose their
// AVX-512 kernels on it, and keep their AVX2 and portable ones for the CPUs without. The
// environment variable TPSLICE_ISA=avx2, read once at start-up, caps the kernels at AVX2
// (to compare them, or to test the AVX2 kernels on an AVX-512 machine).
func AcceleratedAVX512() bool { return useAVX512 }

// AcceleratedBF16Dot reports whether, beyond AcceleratedAVX512, the CPU runs AVX512_BF16
// (VDPBF16PS, VCVTNEPS2BF16; detected once): packages choose their bf16-dot kernels on it.
func AcceleratedBF16Dot() bool { return useBF16Dot }
