// Shared by the AVX-512 GEMM kernels of the 32-value types (gemm_avx512_amd64.s, four rows
// of activations a tile, and gemm8_avx512_amd64.s, eight): how a quad of weights is made
// ready, with R9 the block, Z27 the nibbles' shifts and Z28 the byte mask.

// Q8W(K, T) makes quad K's 64 bytes unsigned (w + 128) in T; Q4W(K, T) splits quad K's 32
// bytes of nibbles into T (rows 0-7 low, 16 times rows 8-15 high).
#define Q8W(K, T) VPXORD (64*(K))(R9), Z28, T

#define Q4W(K, T) \
	VBROADCASTI64X4 (32*(K))(R9), T; \
	VPANDD          Z28, T, T

// NIBFIX shifts the high nibbles of a split quad's products down (Z27); NOFIX leaves a
// quad whose bytes are whole as it is.
#define NIBFIX(R) VPSRAVD Z27, R, R
#define NOFIX(R)
