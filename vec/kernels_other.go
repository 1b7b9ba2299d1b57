//go:build !amd64 || noasm

package vec

import "github.com/tpslice/tpslice/dtype"

// Without the amd64 assembly every kernel is its portable Go implementation (generic.go).

// useAVX2, useAVX512 and useBF16Dot are false: there is no assembly to use.
const useAVX2, useAVX512, useBF16Dot = false, false, false

func addF32(dst, src []float32)                                { addF32Go(dst, src) }
func widen(t dtype.DType, dst []float32, src []uint16)         { widenGo(t, dst, src) }
func narrow(t dtype.DType, dst []uint16, src []float32)        { narrowGo(t, dst, src) }
func sumF32(dst []float32, srcs [][]float32)                   { sumF32Go(dst, srcs) }
func sum16(t dtype.DType, dst []uint16, srcs [][]uint16)       { sum16Go(t, dst, srcs) }
func sum16ToF32(t dtype.DType, dst []float32, srcs [][]uint16) { sum16ToF32Go(t, dst, srcs) }
