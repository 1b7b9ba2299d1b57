//go:build linux

package ipc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// ProcStat is what /proc/<pid>/stat says of a process that a supervisor needs to tell a
// stopped or blocked child from a busy one: its scheduler state and the CPU time it used.
type ProcStat struct {
	Pid      int
	State    byte   // R running, S sleeping, D disk wait, T stopped, t traced, Z zombie, …
	CPUTicks uint64 // user + system time, in clock ticks (USER_HZ)
}

// stateNames spell out the states proc(5) lists, for messages.
var stateNames = map[byte]string{'R': "running", 'S': "sleeping", 'D': "disk sleep", 'T': "stopped",
	't': "tracing stop", 'Z': "zombie", 'X': "dead", 'I': "idle", 'P': "parked", 'W': "waking"}

// StateName is the state as ps writes it with its meaning, such as "T (stopped)".
func (s ProcStat) StateName() string {
	if name, ok := stateNames[s.State]; ok {
		return fmt.Sprintf("%c (%s)", s.State, name)
	}
	return fmt.Sprintf("%q", s.State)
}

// ReadProcStat reads pid's /proc/<pid>/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, fmt.Errorf("ipc: state of pid %d: %w", pid, err)
	}
	return parseProcStat(pid, b)
}

// parseProcStat parses a stat line: "pid (comm) state ppid … utime stime …". The command
// name may hold spaces and parentheses, so the fields count from its last ')'.
func parseProcStat(pid int, line []byte) (ProcStat, error) {
	end := bytes.LastIndexByte(line, ')')
	if end < 0 {
		return ProcStat{}, fmt.Errorf("ipc: /proc/%d/stat: no ')' after the command name in %q", pid, line)
	}
	// After the name: state is field 3 of proc(5), utime 14 and stime 15.
	fields := bytes.Fields(line[end+1:])
	if len(fields) < 13 || len(fields[0]) != 1 {
		return ProcStat{}, fmt.Errorf("ipc: /proc/%d/stat: %d fields after the command name, want at least 13 with a one-letter state, in %q", pid, len(fields), line)
	}
	s := ProcStat{Pid: pid, State: fields[0][0]}
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return ProcStat{}, fmt.Errorf("ipc: /proc/%d/stat: CPU time %q: %w", pid, f, err)
		}
		s.CPUTicks += n
	}
	return s, nil
}
