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
	return parseFlagsHelp(fs, args, fmt.Sprintf("usage: tpslice %s [flags]", fs.Name()))
}

// parseFlagsHelp is parseFlags for a command whose help starts with a header of its own
// (its synopsis) instead of the generic "usage: tpslice NAME [flags]".
func parseFlagsHelp(fs *flag.FlagSet, args []string, header string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(fs, header)
		return flag.ErrHelp
	case err != nil:
		return usageError{fmt.Errorf("%s: %w (tpslice %s -h lists its flags)", fs.Name(), err, fs.Name())}
	}
	return nil
}

// printHelp prints header and the flags to the flag set's output.
func printHelp(fs *flag.FlagSet, header string) {
	fmt.Fprintf(fs.Output(), "%s\n\nflags:\n", header)
	fs.PrintDefaults()
}
