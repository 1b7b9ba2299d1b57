//go:build !amd64 || noasm

package vec

func readSum(x []float32, acc *[readLanes]float32) { readSumGo(x, acc) }
