//go:build amd64 && !noasm

package vec

import "os"

// useAVX2 reports whether the AVX2 + F16C + FMA kernels may run: the CPU has all three and
// the OS saves the YMM registers. It is computed once at package initialisation and never written
// again.
var useAVX2 = detectAVX2()

// useAVX512 reports whether the AVX-512 kernels may run: AVX2 and F16C as for useAVX2,
// AVX-512 F, BW, VL and VNNI, the OS saving the opmask and ZMM state, and TPSLICE_ISA not
// capping the kernels at avx2. Computed once.
var useAVX512 = useAVX2 && detectAVX512() && os.Getenv("TPSLICE_ISA") != "avx2"

// useBF16Dot reports whether the AVX-512 BF16 instructions (VDPBF16PS, VCVTNEPS2BF16) may
// run: useAVX512 and CPUID leaf 7 subleaf 1 reporting AVX512_BF16. Computed once.
var useBF16Dot = useAVX512 && detectAVX512BF16()

// cpuid executes CPUID with EAX=eaxArg, ECX=ecxArg.
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// xgetbv reads XCR0 (XGETBV with ECX=0). Call it only when CPUID reports OSXSAVE.
func xgetbv() (eax, edx uint32)

// detectAVX2 reports whether the CPU supports AVX2, F16C and FMA and the OS has enabled the
// AVX state (XCR0 bits 1 and 2). FMA is required by layers' linear kernels, whose reference
// loop fuses every product into its partial sum (every AVX2 CPU of Intel and AMD has it).
func detectAVX2() bool {
	const (
		ecx1FMA     = 1 << 12
		ecx1OSXSAVE = 1 << 27
		ecx1AVX     = 1 << 28
		ecx1F16C    = 1 << 29
		ebx7AVX2    = 1 << 5
		xcr0SSEAVX  = 1<<1 | 1<<2
	)
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	if want := uint32(ecx1FMA | ecx1OSXSAVE | ecx1AVX | ecx1F16C); ecx1&want != want {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&xcr0SSEAVX != xcr0SSEAVX {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&ebx7AVX2 != 0
}

// detectAVX512 reports whether the CPU has AVX-512 F, BW, VL and VNNI and the OS has
// enabled the opmask and ZMM state (XCR0 bits 5 to 7). Call it after detectAVX2 holds.
func detectAVX512() bool {
	const (
		ebx7F, ebx7BW, ebx7VL = 1 << 16, 1 << 30, 1 << 31
		ecx7VNNI              = 1 << 11
		xcr0ZMM               = 1<<5 | 1<<6 | 1<<7
	)
	if xcr0, _ := xgetbv(); xcr0&xcr0ZMM != xcr0ZMM {
		return false
	}
	_, ebx7, ecx7, _ := cpuid(7, 0)
	return ebx7&(ebx7F|ebx7BW|ebx7VL) == ebx7F|ebx7BW|ebx7VL && ecx7&ecx7VNNI != 0
}

// detectAVX512BF16 reports whether the CPU has AVX512_BF16 (CPUID.(EAX=7,ECX=1):EAX bit 5).
// Call it after detectAVX512 holds.
func detectAVX512BF16() bool {
	const eax71BF16 = 1 << 5
	maxSub, _, _, _ := cpuid(7, 0)
	if maxSub < 1 {
		return false
	}
	eax71, _, _, _ := cpuid(7, 1)
	return eax71&eax71BF16 != 0
}
