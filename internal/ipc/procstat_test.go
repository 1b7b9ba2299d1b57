//go:build linux

package ipc

import (
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestParseProcStat: the fields count from the command name's last ')', so a name with
// spaces and parentheses does not shift them; a short or garbled line is an error naming
// the pid.
func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       ProcStat
		err        string
	}{
		{"plain", "42 (tpslice) T 1 42 42 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 3 0 10 1 1", ProcStat{Pid: 42, State: 'T', CPUTicks: 12}, ""},
		{"odd name", "42 (a) b (c) ) R 1 42 42 0 -1 4194560 100 0 0 0 30 1 0 0 20 0 3 0 10 1 1", ProcStat{Pid: 42, State: 'R', CPUTicks: 31}, ""},
		{"short", "42 (x) S 1 2", ProcStat{}, "/proc/42/stat: 3 fields"},
		{"no name", "42 x S", ProcStat{}, "no ')'"},
		{"bad time", "42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 x 5 0", ProcStat{}, `CPU time "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat(42, []byte(tc.line))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, "T (stopped)", ProcStat{State: 'T'}.StateName())
}

// TestReadProcStatStopped: a child stopped with SIGSTOP reads as T and uses no CPU time
// while stopped; the thread reading its own stat reads as running. (The process's stat is
// its main thread's, which may sleep while another thread reads it, so the test reads its
// own thread's: /proc/<tid>/stat.)
func TestReadProcStatStopped(t *testing.T) {
	runtime.LockOSThread()
	self, err := ReadProcStat(unix.Gettid())
	runtime.UnlockOSThread()
	require.NoError(t, err)
	require.Equal(t, byte('R'), self.State, "reading its own stat, a thread runs")
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.NoError(t, cmd.Process.Signal(unix.SIGSTOP))
	var s ProcStat
	require.Eventually(t, func() bool {
		s, err = ReadProcStat(cmd.Process.Pid)
		return err == nil && s.State == 'T'
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, "T (stopped)", s.StateName())
	_, err = ReadProcStat(-1)
	require.ErrorContains(t, err, "pid -1")
}
