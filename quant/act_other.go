//go:build !amd64 || noasm

package quant

// quantRowAsm reports that no assembly quantizes rows in this build.
func quantRowAsm(a Acts, dst []byte, x []float32) bool { return false }
