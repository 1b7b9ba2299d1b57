//go:build !noasm

package layers

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/vec"
)

// TestReduceAVX2StaysInBounds runs every kernel with each operand flush against an
// inaccessible page, after its end and before its start, so that any access outside the n
// elements (a wider load in the tail, a masked load that touches masked-off elements) faults
// and fails the test.
func TestReduceAVX2StaysInBounds(t *testing.T) {
	if !vec.Accelerated() {
		t.Skip("CPU lacks AVX2/F16C: the assembly does not run")
	}
	const operands = 6 // x, four rows, and an output
	page := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, (2*operands+1)*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { require.NoError(t, syscall.Munmap(mem)) }()
	for i := 0; i <= 2*operands; i += 2 { // pages 0, 2, … are guards, 1, 3, … data
		require.NoError(t, syscall.Mprotect(mem[i*page:(i+1)*page], syscall.PROT_NONE))
	}
	r := rand.New(rand.NewPCG(77, 78))
	// operand returns n elements of data page i, at its start or flush with its end.
	operand := func(i, n int, atEnd bool) []float32 {
		p := unsafe.Slice((*float32)(unsafe.Pointer(&mem[(2*i+1)*page])), page/4)
		for k := range p {
			p[k] = 2*r.Float32() - 1
		}
		if atEnd {
			return p[len(p)-n:]
		}
		return p[:n]
	}
	for _, atEnd := range []bool{false, true} {
		for n := Lanes; n <= 70; n++ {
			t.Run(fmt.Sprintf("n=%d/atEnd=%v", n, atEnd), func(t *testing.T) {
				// A fault panics (per goroutine, so here) instead of killing the process.
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				x, y := operand(0, n, atEnd), operand(5, n, atEnd)
				w0, w1, w2, w3 := operand(1, n, atEnd), operand(2, n, atEnd), operand(3, n, atEnd), operand(4, n, atEnd)
				a := (*[4]float32)(operand(4, 4, !atEnd)) // the other end of w3's page
				dotAVX2(&x[0], &w0[0], n)
				dot4AVX2((*[4]float32)(operand(5, 4, atEnd)), &x[0], &w0[0], &w1[0], &w2[0], &w3[0], n)
				sumAVX2(&x[0], n)
				maxAVX2(&x[0], n)
				axpyAVX2(&y[0], 0.5, &x[0], n)
				axpy4AVX2(&y[0], a, &w0[0], &w1[0], &w2[0], &w3[0], n)
				expSubAVX2(&y[0], 0.25, n)
			})
		}
	}
}
