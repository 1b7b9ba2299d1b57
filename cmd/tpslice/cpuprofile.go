package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileFlag adds --cpuprofile, the file a command writes its CPU profile to (go
// tool pprof reads it), as go test's -cpuprofile.
func cpuProfileFlag(fs *flag.FlagSet, path *string) {
	fs.StringVar(path, "cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof)")
}

// startCPUProfile starts profiling the process into path (nothing for ""); stop ends
// the profile and closes the file, and a bad path fails here, before the work.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("--cpuprofile: %w", err), f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}
