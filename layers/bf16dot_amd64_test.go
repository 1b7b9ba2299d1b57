//go:build amd64 && !noasm

package layers

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/internal/testutil"
	"github.com/tpslice/tpslice/vec"
)

// bf16Operand draws a bf16 whose exponent field lies in [emin, emax] (0 subnormal, 255
// infinity or NaN), sign and mantissa uniform.
func bf16Operand(r *rand.Rand, emin, emax int) uint16 {
	e := emin + r.IntN(emax-emin+1)
	return uint16(r.IntN(2))<<15 | uint16(e)<<7 | uint16(r.IntN(128))
}

// dpbf16Case fills one register's operands in one of the regimes where the readings of
// VDPBF16PS differ: ordinary magnitudes, products near and below the smallest normal,
// any bit pattern (subnormals, infinities, NaNs), and sums that cancel.
func dpbf16Case(r *rand.Rand, regime int, acc *[16]float32, x, w *[32]uint16) {
	for i := range x {
		switch regime {
		case 0:
			x[i], w[i] = bf16Operand(r, 120, 134), bf16Operand(r, 120, 134)
		case 1:
			x[i], w[i] = bf16Operand(r, 60, 70), bf16Operand(r, 60, 70)
		case 2:
			x[i], w[i] = uint16(r.Uint32()), uint16(r.Uint32())
		default:
			x[i], w[i] = bf16Operand(r, 125, 129), bf16Operand(r, 125, 129)
		}
	}
	for l := range acc {
		switch regime {
		case 1:
			acc[l] = math.Float32frombits(r.Uint32()&0x807fffff | uint32(r.IntN(4))<<23)
		case 2:
			acc[l] = math.Float32frombits(r.Uint32())
		case 3: // minus the even product, nudged by a few units: the odd product decides
			p0 := dpbf16(0, x[2*l], 0, w[2*l], 0)
			acc[l] = -p0 + float32(math.Ldexp(float64(r.IntN(64)-32), -30))
		default:
			acc[l] = math.Float32frombits(r.Uint32()&0x807fffff | uint32(110+r.IntN(30))<<23)
		}
	}
}

// TestDPBF16MatchesVDPBF16PS pins dpbf16, the reference of the bf16 dot product, to the
// CPU's VDPBF16PS bit for bit (any NaN matching any NaN) in every regime of dpbf16Case.
func TestDPBF16MatchesVDPBF16PS(t *testing.T) {
	if !vec.AcceleratedBF16Dot() {
		t.Skip("CPU lacks AVX512_BF16: VDPBF16PS does not run")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 40000 {
		var acc, got [16]float32
		var x, w [32]uint16
		dpbf16Case(r, n%4, &acc, &x, &w)
		got = acc
		vdpbf16ps16(&got, &x, &w)
		for l := range acc {
			want := dpbf16(acc[l], x[2*l], x[2*l+1], w[2*l], w[2*l+1])
			if want != want && got[l] != got[l] {
				continue
			}
			require.Equal(t, math.Float32bits(want), math.Float32bits(got[l]),
				"regime %d lane %d: acc %x x (%04x, %04x) w (%04x, %04x)", n%4, l,
				math.Float32bits(acc[l]), x[2*l], x[2*l+1], w[2*l], w[2*l+1])
		}
	}
}

// FuzzDPBF16 runs VDPBF16PS on any 16-lane register's worth of bits against dpbf16.
func FuzzDPBF16(f *testing.F) {
	if !vec.AcceleratedBF16Dot() {
		f.Skip("CPU lacks AVX512_BF16: VDPBF16PS does not run")
	}
	f.Add(make([]byte, 64+64+64))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 192 {
			return
		}
		var acc, got [16]float32
		var x, w [32]uint16
		for l := range acc {
			acc[l] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*l:]))
		}
		for i := range x {
			x[i] = binary.LittleEndian.Uint16(b[64+2*i:])
			w[i] = binary.LittleEndian.Uint16(b[128+2*i:])
		}
		got = acc
		vdpbf16ps16(&got, &x, &w)
		for l := range acc {
			want := dpbf16(acc[l], x[2*l], x[2*l+1], w[2*l], w[2*l+1])
			if want != want && got[l] != got[l] {
				continue
			}
			require.Equal(t, math.Float32bits(want), math.Float32bits(got[l]), "lane %d", l)
		}
	})
}

// TestRoundBF16MatchesVCVTNEPS2BF16 pins roundBF16 to VCVTNEPS2BF16 on every float32 bit
// pattern of a stride through all 2³² (every subnormal exponent, ties, NaNs) and on random
// ones.
func TestRoundBF16MatchesVCVTNEPS2BF16(t *testing.T) {
	if !vec.AcceleratedBF16Dot() {
		t.Skip("CPU lacks AVX512_BF16: VCVTNEPS2BF16 does not run")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var f [16]float32
	var got [16]uint16
	check := func() {
		vcvtneps2bf16x16(&got, &f)
		for l, v := range f {
			require.Equal(t, roundBF16(v), got[l], "f = %#08x", math.Float32bits(v))
		}
	}
	for u := uint64(0); u < 1<<32; u += 16 * 4099 {
		for l := range f {
			f[l] = math.Float32frombits(uint32(u) + uint32(l)*0x8001)
		}
		check()
	}
	for range 20000 {
		for l := range f {
			f[l] = math.Float32frombits(r.Uint32())
		}
		check()
	}
}

// BenchmarkBF16DotPaths compares, at medium's shapes, LinearRows on bf16 weights (f32
// activations; the AVX2 GEMV or the AVX-512 GEMM) with RoundBF16 + LinearBF16DotRows
// (VDPBF16PS), the rounding of the activations counted in.
func BenchmarkBF16DotPaths(b *testing.B) {
	if !vec.Accelerated() {
		b.Skip("CPU lacks AVX2 and FMA")
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, shape := range []struct{ out, in int }{{4096, 2048}, {2048, 5632}} {
		w := randMatrix(r, dtype.BF16, shape.out, shape.in)
		for _, m := range []int{1, 4, 128} {
			x := randF32(r, m*shape.in, 1)
			xb := make([]uint16, len(x))
			y := make([]float32, m*shape.out)
			run := func(b *testing.B, fn func()) {
				cpu0 := testutil.CPUSeconds(b)
				for b.Loop() {
					fn()
				}
				flops := 2 * float64(m*shape.out*shape.in) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(flops/(testutil.CPUSeconds(b)-cpu0)/1e9, "cpuGFLOP/s")
			}
			name := fmt.Sprintf("%dx%d/M=%d", shape.out, shape.in, m)
			b.Run(name+"/impl=f32acts", func(b *testing.B) {
				run(b, func() { linearRows(y, x, w, m, 0, shape.out) })
			})
			for _, k := range isaBF16DotKernels() {
				b.Run(name+"/impl=bf16dot-"+k.name, func(b *testing.B) {
					run(b, func() {
						roundBF16Slice(xb, x)
						k.run(y, xb, w, m, 0, shape.out)
					})
				})
			}
			if m == 1 {
				b.Run(name+"/impl=bf16dot-go", func(b *testing.B) {
					run(b, func() {
						roundBF16Slice(xb, x)
						linearBF16DotGo(y, xb, w, m, 0, shape.out)
					})
				})
			}
		}
	}
}

// evexVDPBF16PS is the EVEX encoding of VDPBF16PS zmm(d), zmm(s1), zmm(s2) (Intel order;
// register forms): 62, P0 (inverted R, X, B, R' and map 0F38), P1 (W0, inverted vvvv, F3),
// P2 (512 bits, inverted V'), opcode 52, ModRM.
func evexVDPBF16PS(d, s1, s2 int) [6]byte {
	inv := func(r, bit int) byte { return byte(^(r >> bit)) & 1 }
	p0 := inv(d, 3)<<7 | inv(s2, 4)<<6 | inv(s2, 3)<<5 | inv(d, 4)<<4 | 0b10
	p1 := byte(^s1&15)<<3 | 1<<2 | 0b10
	p2 := byte(0b10)<<5 | inv(s1, 4)<<3
	return [6]byte{0x62, p0, p1, p2, 0x52, 0xC0 | byte(d&7)<<3 | byte(s2&7)}
}

// TestVDPBF16PSBytes re-encodes every VDPBF16PS spelled in bytes in the kernel file from
// the mnemonic in its comment, so that no register number in the bytes can drift from it.
func TestVDPBF16PSBytes(t *testing.T) {
	src, err := os.ReadFile("bf16dot_kernel_amd64.s")
	require.NoError(t, err)
	re := regexp.MustCompile(`BYTE \$0x(..); BYTE \$0x(..); BYTE \$0x(..); BYTE \$0x(..); BYTE \$0x(..); BYTE \$0x(..)\s*/\* VDPBF16PS Z(\d+), Z(\d+), Z(\d+) \*/`)
	found := re.FindAllStringSubmatch(string(src), -1)
	require.Len(t, found, 16+4, "VDPBF16PS lines: 16 a step of 4 rows (DOT4X4), 4 of 1 row (DOT1X4)")
	for _, m := range found {
		var got [6]byte
		for i := range got {
			v, err := strconv.ParseUint(m[1+i], 16, 8)
			require.NoError(t, err)
			got[i] = byte(v)
		}
		s2, _ := strconv.Atoi(m[7])
		s1, _ := strconv.Atoi(m[8])
		d, _ := strconv.Atoi(m[9])
		require.Equal(t, evexVDPBF16PS(d, s1, s2), got, "%s", m[0])
	}
}
