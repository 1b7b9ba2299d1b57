// Shared by the bf16-dot kernels (bf16dot_kernel_amd64.s, bf16dot_avx2_amd64.s).

// ROWS4_16 points R8-R11 at the 4 weight rows of 16-bit elements that start at the element
// offsets off[0..3] (CX = off) of the matrix at AX.
#define ROWS4_16 \
	MOVQ 0(CX), R8; \
	LEAQ (AX)(R8*2), R8; \
	MOVQ 8(CX), R9; \
	LEAQ (AX)(R9*2), R9; \
	MOVQ 16(CX), R10; \
	LEAQ (AX)(R10*2), R10; \
	MOVQ 24(CX), R11; \
	LEAQ (AX)(R11*2), R11
