package vec

import (
	"testing"

	"github.com/tpslice/tpslice/dtype"
)

// The fuzz targets take raw bytes as element bit patterns, so the fuzzer reaches every
// NaN payload, subnormal and rounding tie; lengths and offsets come from the input too.

func fuzzSeeds(f *testing.F, extra ...any) {
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 65, 1003} {
		b := make([]byte, 4*n)
		for i := range b {
			b[i] = byte(i*131 + n)
		}
		f.Add(append([]any{b, uint8(n)}, extra...)...)
	}
}

func dtypeOf(bf16 bool) dtype.DType {
	if bf16 {
		return dtype.BF16
	}
	return dtype.F16
}

func FuzzAddF32(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, off uint8) {
		v := bytesToF32(data)
		half := len(v) / 2
		checkAdd(t, v[:half], v[half:2*half], int(off)%(maxOff+1))
	})
}

func FuzzWiden(f *testing.F) {
	fuzzSeeds(f, true)
	fuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte, off uint8, bf16 bool) {
		checkWiden(t, dtypeOf(bf16), bytesTo16(data), int(off)%(maxOff+1))
	})
}

func FuzzNarrow(f *testing.F) {
	fuzzSeeds(f, true)
	fuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, data []byte, off uint8, bf16 bool) {
		checkNarrow(t, dtypeOf(bf16), bytesToF32(data), int(off)%(maxOff+1))
	})
}

func FuzzSumF32(f *testing.F) {
	fuzzSeeds(f, uint8(3))
	fuzzSeeds(f, uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, off, nsrc uint8) {
		v := bytesToF32(data)
		k := int(nsrc)%8 + 1
		n := len(v) / k
		srcs := make([][]float32, k)
		for i := range srcs {
			srcs[i] = v[i*n : (i+1)*n]
		}
		checkSumF32(t, srcs, int(off)%(maxOff+1), int(off>>3)%(k+1)-1)
	})
}

func FuzzSum16(f *testing.F) {
	for _, bf16 := range []bool{true, false} {
		fuzzSeeds(f, uint8(2), bf16)
		fuzzSeeds(f, uint8(8), bf16)
	}
	f.Fuzz(func(t *testing.T, data []byte, off, nsrc uint8, bf16 bool) {
		v := bytesTo16(data)
		k := int(nsrc)%8 + 1
		n := len(v) / k
		srcs := make([][]uint16, k)
		for i := range srcs {
			srcs[i] = v[i*n : (i+1)*n]
		}
		typ := dtypeOf(bf16)
		checkSum16(t, typ, srcs, int(off)%(maxOff+1), int(off>>3)%(k+1)-1)
		checkSum16ToF32(t, typ, srcs, int(off)%(maxOff+1))
	})
}
