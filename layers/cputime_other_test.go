//go:build !unix

package layers

import (
	"testing"
	"time"
)

var processStart = time.Now()

// cpuSeconds stands in for the process's CPU time where it is not read (unix only): the
// wall time since the process started, so cpuGB/s is the wall-clock rate times the workers.
func cpuSeconds(*testing.B) float64 { return time.Since(processStart).Seconds() }
