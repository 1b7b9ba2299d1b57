//go:build !amd64 || noasm

package quant

import "github.com/tpslice/tpslice/dtype"

// asmISAs is empty: this build has no assembly.
func asmISAs() []string { return nil }

func dotRowsISA(string, dtype.DType, []float32, int, []byte, int, []byte, int, int, int, int) {}
