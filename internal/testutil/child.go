package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// childRoleVar names the environment variable that makes a test binary play a child's role
// instead of running its tests.
const childRoleVar = "TPSLICE_TEST_CHILD"

// ChildRole returns the role this test binary was started to play by ChildCommand, or "" when
// it runs tests. A TestMain that finds a role runs it and exits.
func ChildRole() string { return os.Getenv(childRoleVar) }

// ChildCommand returns a command that runs this test binary as a child process in role, with
// env (KEY=value) added to the environment; it runs no tests, and its stderr is the test's.
// It is the helper-process pattern: tests get real processes without building another
// binary.
func ChildCommand(role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childRoleVar+"="+role), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// Reaped reports whether pid has left the process table: it exited and its parent collected
// it, so not even a zombie is left.
func Reaped(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// ChildPids lists this process's children, of every thread (the kernel files a child
// under the thread that forked it), from /proc.
func ChildPids() ([]int, error) {
	files, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) { // a thread that exited meanwhile
			return nil, err
		}
		for _, s := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", f, s, err)
			}
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
