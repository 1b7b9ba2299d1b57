//go:build !unix

package testutil

import (
	"testing"
	"time"
)

var processStart = time.Now()

// CPUSeconds stands in for the process's CPU time where it is not read (unix only): the
// wall time since the process started.
func CPUSeconds(testing.TB) float64 { return time.Since(processStart).Seconds() }
