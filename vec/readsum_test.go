package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// refReadSum is ReadSum's reference loop as its documentation writes it.
func refReadSum(x []float32) float32 {
	var acc [32]float32
	for i := range x {
		acc[i%32] += x[i]
	}
	var s float32
	for _, a := range acc {
		s += a
	}
	return s
}

func TestReadSumMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const chunk = 1 << 15 // the amd64 kernel's call size (sumChunk)
	for _, n := range append(lengths, 127, 128, 129, chunk-1, chunk, chunk+33, 3*chunk+100) {
		for off := range maxOff + 1 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(24)-12))
			}
			x = offsetF32(x, off)
			requireBitsF32(t, []float32{refReadSum(x)}, []float32{ReadSum(x)}, fmt.Sprintf("ReadSum n=%d off=%d", n, off))
		}
	}
}

// TestReadSumSpecials runs ReadSum over infinities, NaNs, subnormals and huge values: the
// result is the reference's bits, or NaN where the reference is NaN (which payload survives
// two NaNs meeting is left open, see the package documentation).
func TestReadSumSpecials(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{31, 32, 64, 1000 + 3} {
		for range 20 {
			x := randSliceF32(r, n)
			want, got := refReadSum(x), ReadSum(x)
			if math.IsNaN(float64(want)) && math.IsNaN(float64(got)) {
				continue
			}
			requireBitsF32(t, []float32{want}, []float32{got}, fmt.Sprintf("ReadSum n=%d", n))
		}
	}
}

// readBandwidthBytes is the buffer BenchmarkReadBandwidth streams: far larger than any
// cache, so that MB/s is the memory's read bandwidth.
const readBandwidthBytes = 256 << 20

// BenchmarkReadBandwidth measures this machine's read bandwidth with a STREAM-style sum over
// 256 MiB (ReadSum, "asm" when the AVX2 kernel runs), split over one and two goroutines, side
// by side with the portable Go loop. MB/s is bytes read:
//
//	go test -run '^$' -bench ReadBandwidth -benchtime 20x ./vec/
func BenchmarkReadBandwidth(b *testing.B) {
	x := make([]float32, readBandwidthBytes/4)
	for i := range x {
		x[i] = float32(i & 1023)
	}
	goSum := func(x []float32) float32 {
		var acc [readLanes]float32
		readSumGo(x, &acc)
		return acc[0]
	}
	for _, workers := range []int{1, 2} {
		for _, impl := range []struct {
			name string
			fn   func([]float32) float32
		}{{exportedName(), ReadSum}, {"go", goSum}} {
			b.Run(fmt.Sprintf("256MiB/goroutines=%d/impl=%s", workers, impl.name), func(b *testing.B) {
				b.SetBytes(readBandwidthBytes)
				sums := make([]float32, workers)
				for b.Loop() {
					var wg sync.WaitGroup
					for k := 1; k < workers; k++ {
						lo, hi := k*len(x)/workers, (k+1)*len(x)/workers
						wg.Go(func() { sums[k] = impl.fn(x[lo:hi]) })
					}
					sums[0] = impl.fn(x[:len(x)/workers])
					wg.Wait()
				}
			})
		}
	}
}
