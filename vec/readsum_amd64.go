//go:build amd64 && !noasm

package vec

//go:noescape
func readSumAVX2(x *float32, n int, acc *[readLanes]float32)

// readSum adds x into the partials in ReadSum's order, sumChunk elements per assembly call
// so that the goroutine stays preemptible.
func readSum(x []float32, acc *[readLanes]float32) {
	for useAVX2 && len(x) >= readLanes {
		k := min(len(x), sumChunk) &^ (readLanes - 1)
		readSumAVX2(&x[0], k, acc)
		x = x[k:]
	}
	readSumGo(x, acc)
}
