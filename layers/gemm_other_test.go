//go:build !amd64 || noasm

package layers

// isaLinearKernels are the instruction sets' kernels the differential tests force: none
// without the amd64 assembly.
func isaLinearKernels() []linearKernel { return nil }
