//go:build !amd64 || noasm

package vec

func addSquares(x []float32, p *[normLanes]float32) { addSquaresGo(x, p) }

func scaleMul(out, x, w []float32, s float32) { scaleMulGo(out, x, w, s) }
