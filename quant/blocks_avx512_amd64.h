// Shared by the AVX-512 kernels of Dot (dot_group_avx512_amd64.s, the GEMV, and
// gemm_avx512_amd64.s, the GEMM): the constants both load and the steps that make a block's
// quads, scales and mins ready, which the GEMM takes as the GEMV does so that its sums are
// the GEMV's. Each file that includes this holds its own copy of the constants.

DATA gbytes0f<>+0(SB)/4, $0x0f0f0f0f
GLOBL gbytes0f<>(SB), RODATA|NOPTR, $4
DATA gbytes10<>+0(SB)/4, $0x10101010
GLOBL gbytes10<>(SB), RODATA|NOPTR, $4
DATA gbytes30<>+0(SB)/4, $0x30303030
GLOBL gbytes30<>(SB), RODATA|NOPTR, $4
DATA gbytes3f<>+0(SB)/4, $0x3f3f3f3f
GLOBL gbytes3f<>(SB), RODATA|NOPTR, $4
DATA gbytes80<>+0(SB)/4, $0x80808080
GLOBL gbytes80<>(SB), RODATA|NOPTR, $4
DATA gf64x256<>+0(SB)/8, $256.0
GLOBL gf64x256<>(SB), RODATA|NOPTR, $8
DATA gf64x32<>+0(SB)/8, $32.0
GLOBL gf64x32<>(SB), RODATA|NOPTR, $8

// gnibmask splits a nibble quad broadcast to both halves of a register, [0x0f × 32 | 0xf0
// × 32]; gnibshift (0 in dword lanes 0-7, 4 in 8-15) divides rows 8-15's sums back by 16.
DATA gnibmask<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gnibmask<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gnibmask<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gnibmask<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA gnibmask<>+32(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA gnibmask<>+40(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA gnibmask<>+48(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA gnibmask<>+56(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL gnibmask<>(SB), RODATA|NOPTR, $64
DATA gnibshift<>+0(SB)/8, $0
DATA gnibshift<>+8(SB)/8, $0
DATA gnibshift<>+16(SB)/8, $0
DATA gnibshift<>+24(SB)/8, $0
DATA gnibshift<>+32(SB)/8, $0x0000000400000004
DATA gnibshift<>+40(SB)/8, $0x0000000400000004
DATA gnibshift<>+48(SB)/8, $0x0000000400000004
DATA gnibshift<>+56(SB)/8, $0x0000000400000004
GLOBL gnibshift<>(SB), RODATA|NOPTR, $64

// k4mperm: byte 4r+j of the result is byte 16j+r of the source (row r's m_j, j = 0..3).
DATA k4mperm<>+0(SB)/8, $0x3121110130201000
DATA k4mperm<>+8(SB)/8, $0x3323130332221202
DATA k4mperm<>+16(SB)/8, $0x3525150534241404
DATA k4mperm<>+24(SB)/8, $0x3727170736261606
DATA k4mperm<>+32(SB)/8, $0x3929190938281808
DATA k4mperm<>+40(SB)/8, $0x3b2b1b0b3a2a1a0a
DATA k4mperm<>+48(SB)/8, $0x3d2d1d0d3c2c1c0c
DATA k4mperm<>+56(SB)/8, $0x3f2f1f0f3e2e1e0e
GLOBL k4mperm<>(SB), RODATA|NOPTR, $64

// q6Rot: the rotations (4-2L mod 32 in 128-bit lane L) that bring a Q6_K quad's high bits
// to bits 4-5 (Q6READY).
DATA q6Rot<>+0(SB)/8, $0x0000000400000004
DATA q6Rot<>+8(SB)/8, $0x0000000400000004
DATA q6Rot<>+16(SB)/8, $0x0000000200000002
DATA q6Rot<>+24(SB)/8, $0x0000000200000002
DATA q6Rot<>+32(SB)/8, $0
DATA q6Rot<>+40(SB)/8, $0
DATA q6Rot<>+48(SB)/8, $0x0000001e0000001e
DATA q6Rot<>+56(SB)/8, $0x0000001e0000001e
GLOBL q6Rot<>(SB), RODATA|NOPTR, $64

// Q6READY(K) makes quad K of a Q6_K block (at R9) ready in Z16: its nibbles split (Z29
// 0x0f bytes), its high bits rotated in (Z22 q6Rot, Z20 0x30 bytes), through Z17.
#define Q6READY(K) \
	VMOVDQU32       (32*(K))(R9), Y16; \
	VPSRLW          $4, Y16, Y17; \
	VINSERTI64X4    $1, Y17, Z16, Z16; \
	VPANDD          Z29, Z16, Z16; \
	VBROADCASTI32X4 (2048+16*(K))(R9), Z17; \
	VPROLVD         Z22, Z17, Z17; \
	VPTERNLOGD      $0xf8, Z20, Z17, Z16

// K4SUMDIGITS(SRC, OFF) writes the digits of the super-block's sub-block sums A_j (from the
// activations' 16-value sums at SRC) to OFF(SP): a0_0..7, then a1, then a2, a byte each,
// through Z4-Z6.
#define K4SUMDIGITS(SRC, OFF) \
	VMOVDQU32 SRC, Z4; \
	VPSRLQ    $32, Z4, Z5; \
	VPADDD    Z5, Z4, Z4; \
	VPMOVQD   Z4, Y4; \
	VPSLLD    $24, Y4, Y5; \
	VPSRAD    $24, Y5, Y5; \
	VPSUBD    Y5, Y4, Y4; \
	VPSRAD    $8, Y4, Y4; \
	VPSLLD    $24, Y4, Y6; \
	VPSRAD    $24, Y6, Y6; \
	VPSUBD    Y6, Y4, Y4; \
	VPSRAD    $8, Y4, Y4; \
	VPMOVDB   Y5, OFF(SP); \
	VPMOVDB   Y6, (OFF+8)(SP); \
	VPMOVDB   Y4, (OFF+16)(SP)

// K4SCALES(SC, G, OFF, T, C0F) writes the scales of the Q4_K or Q5_K group at G (its scale
// bytes at SC G) to OFF(SP), sub-block j's 16 at OFF+16j, through T; Z28 holds 0x3f bytes,
// Z26 0x30, C0F 0x0f.
#define K4SCALES(SC, G, OFF, T, C0F) \
	VPANDD     (SC)G, Z28, T; \
	VMOVDQU32  T, OFF(SP); \
	VPSRLW     $2, (SC)G, T; \
	VPANDD     Z26, T, T; \
	VPTERNLOGD $0xf8, (SC+128)G, C0F, T; \
	VMOVDQU32  T, (OFF+64)(SP)

// K4MINBYTES(SC, G, T, U, V, C0F) leaves the mins of the group at G as four bytes a row
// (k4mperm, in Z27): m_0..3 in T, m_4..7 in U, through V; Z28, Z26 and C0F as K4SCALES'.
#define K4MINBYTES(SC, G, T, U, V, C0F) \
	VPANDD     (SC+64)G, Z28, T; \
	VPERMB     T, Z27, T; \
	VPSRLW     $2, (SC+64)G, U; \
	VPANDD     Z26, U, U; \
	VPSRLW     $4, (SC+128)G, V; \
	VPTERNLOGD $0xf8, V, C0F, U; \
	VPERMB     U, Z27, U
