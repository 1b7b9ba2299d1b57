//go:build amd64 && !noasm

package vec

//go:noescape
func sumSquaresAVX2(x *float32, n int, p *[normLanes]float32)

//go:noescape
func scaleMulAVX2(out, x, w *float32, n int, s float32)

// addSquares adds x's squares into the lane partials in SumSquares' order: element i of x
// into p[i mod 8] (x starts on a lane boundary).
func addSquares(x []float32, p *[normLanes]float32) {
	for useAVX2 && len(x) >= normLanes {
		k := min(len(x), sumChunk) &^ (normLanes - 1) // bounded, so the goroutine stays preemptible
		sumSquaresAVX2(&x[0], k, p)
		x = x[k:]
	}
	addSquaresGo(x, p)
}

// scaleMul writes out[i] = x[i]*s*w[i]; len(x), len(w) ≥ len(out).
func scaleMul(out, x, w []float32, s float32) {
	k := 0
	if useAVX2 {
		k = len(out) &^ (normLanes - 1)
		for lo := 0; lo < k; lo += sumChunk {
			hi := min(lo+sumChunk, k)
			scaleMulAVX2(&out[lo], &x[lo], &w[lo], hi-lo, s)
		}
	}
	scaleMulGo(out[k:], x[k:], w[k:], s)
}
