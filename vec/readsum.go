package vec

// readLanes is how many interleaved partial sums ReadSum keeps: four AVX2 registers of f32,
// enough independent adds to keep a core's loads in flight.
const readLanes = 32

// ReadSum returns the sum of x in a fixed order chosen so that the assembly streams x at
// the memory's read bandwidth (a STREAM-style read: one load and one add per element, no
// writes). It is the probe that measures this machine's read bandwidth, the roofline every
// memory-bound kernel is compared against:
//
//	var acc [32]float32
//	for i := range x { acc[i%32] += x[i] }
//	var s float32
//	for _, a := range acc { s += a }
//	return s
//
// On amd64 with AVX2 it runs four YMM accumulators (VADDPS with the accumulator first),
// bitwise identical to the loop.
func ReadSum(x []float32) float32 {
	var acc [readLanes]float32
	readSum(x, &acc)
	var s float32
	for _, a := range acc {
		s += a
	}
	return s
}

// readSumGo adds x into the partials in ReadSum's order: element i into acc[i%32] (x starts
// on a partial boundary).
func readSumGo(x []float32, acc *[readLanes]float32) {
	i := 0
	for ; i+readLanes <= len(x); i += readLanes {
		v := (*[readLanes]float32)(x[i : i+readLanes])
		for j := range acc {
			acc[j] += v[j]
		}
	}
	for j := 0; i < len(x); i, j = i+1, j+1 {
		acc[j] += x[i]
	}
}
