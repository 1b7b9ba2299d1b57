package main

import (
	"fmt"
	"io"
	"os"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/engine"
)

// newEngine starts an engine for a command, with the debug log TPSLICE_DEBUG and
// TPSLICE_DEBUG_SUBSYS ask for (WARN without them) written to stderr and the fault TPSLICE_FAULT injects; a
// value they do not take is a usage error naming the variable.
func newEngine(cfg engine.Config, stderr io.Writer) (*engine.Engine, error) {
	d, err := diag.FromEnv(os.Getenv, stderr)
	if err != nil {
		return nil, usageError{err}
	}
	if d == nil { // a failed step and its flight recorder are logged (WARN) even so
		d = diag.New(stderr, diag.Warn)
	}
	fault, err := comm.FaultFromEnv()
	if err != nil {
		return nil, usageError{err}
	}
	if fault != nil {
		fmt.Fprintf(stderr, "tpslice: %s=%v: injecting that fault once\n", comm.EnvFault, fault.Fault())
	}
	cfg.Debug, cfg.Fault = d, fault
	return engine.New(cfg)
}
