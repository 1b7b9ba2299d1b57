package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version prints what the binary was built from: the module version (or "devel"), the
// commit and whether the tree had changes (vcs.revision, vcs.modified), and the Go
// toolchain and platform.
func version(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("version: unexpected argument %q", fs.Arg(0))}
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

func versionLine() string {
	v, rev := "devel", "unknown commit"
	if info, ok := debug.ReadBuildInfo(); ok {
		if m := info.Main.Version; m != "" && m != "(devel)" {
			v = m
		}
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified {
			rev += ", modified"
		}
	}
	return fmt.Sprintf("tpslice %s (%s) %s %s/%s", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
