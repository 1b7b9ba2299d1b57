package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// usageError is a mistake in the command line itself (an unknown command or flag, a flag
// without its value): the command exits 2, as flag and the shells do; every other error
// exits 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the process's exit status for what run returned: 0 for success and for
// -h/--help, 2 for a usage error, 1 for any other failure.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// parseFlags parses a command's flags. With -h or --help it prints the command's flags to
// the flag set's output and returns flag.ErrHelp; a bad flag is a usageError naming it
// once (flag's own message and usage dump are kept out of the output).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(out, "usage: tpslice %s [flags]\n\nflags:\n", fs.Name())
		fs.PrintDefaults()
		return flag.ErrHelp
	case err != nil:
		return usageError{fmt.Errorf("%s: %w (tpslice %s -h lists its flags)", fs.Name(), err, fs.Name())}
	}
	return nil
}
