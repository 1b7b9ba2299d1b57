package main

import (
	"io"
	"os"

	"github.com/tpslice/tpslice/diag"
	"github.com/tpslice/tpslice/engine"
)

// newEngine starts an engine for a command, with the debug log TPSLICE_DEBUG and
// TPSLICE_DEBUG_SUBSYS ask for written to stderr; a value they do not take is a usage
// error naming the variable.
func newEngine(cfg engine.Config, stderr io.Writer) (*engine.Engine, error) {
	d, err := diag.FromEnv(os.Getenv, stderr)
	if err != nil {
		return nil, usageError{err}
	}
	cfg.Debug = d
	return engine.New(cfg)
}
