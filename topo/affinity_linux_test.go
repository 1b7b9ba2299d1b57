package topo_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/topo"
)

// pinChildEnv makes the test binary the child of TestPinProcess: it pins itself and prints
// every thread's allowed CPUs.
const pinChildEnv = "TPSLICE_TOPO_PIN_CHILD"

// TestPinProcess: a process that pins itself (as a rank's worker does at start-up) leaves
// every thread it had, and every thread it starts after, on the CPUs it asked for. It runs
// in a child process, since pinning would hold this test binary to one CPU.
func TestPinProcess(t *testing.T) {
	if cpu := os.Getenv(pinChildEnv); cpu != "" {
		pinChild(t, cpu)
		return
	}
	allowed, err := topo.AllowedCPUs()
	require.NoError(t, err)
	want := allowed[len(allowed)-1:]
	cmd := exec.Command(os.Args[0], "-test.run=^TestPinProcess$", "-test.v")
	cmd.Env = append(os.Environ(), pinChildEnv+"="+want.String())
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "sched_setaffinity refused") {
		t.Skip(string(out))
	}
	require.NoError(t, err, "%s", out)
	threads := 0
	for line := range strings.SplitSeq(string(out), "\n") {
		if tid, cpus, ok := strings.Cut(strings.TrimSpace(line), " Cpus_allowed_list: "); ok {
			require.Equal(t, want.String(), cpus, "thread %s", tid)
			threads++
		}
	}
	require.Greater(t, threads, 4, "the child's threads, those locked before the pin and one started after:\n%s", out)
}

// pinChild holds four threads, pins the process to cpu, starts one more thread and prints
// every thread's Cpus_allowed_list.
func pinChild(t *testing.T, cpu string) {
	release := make(chan struct{})
	defer close(release)
	locked := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			locked <- struct{}{}
			<-release
		}()
		<-locked
	}
	cpus, err := topo.ParseCPUList(cpu)
	require.NoError(t, err)
	if err := topo.PinProcess(cpus); err != nil {
		fmt.Println("sched_setaffinity refused:", err)
		return
	}
	go func() {
		runtime.LockOSThread() // a thread started after the pin
		locked <- struct{}{}
		<-release
	}()
	<-locked
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	require.NoError(t, err)
	for _, status := range tasks {
		b, err := os.ReadFile(status)
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				fmt.Printf("%s Cpus_allowed_list: %s\n", filepath.Base(filepath.Dir(status)), strings.TrimSpace(v))
			}
		}
	}
}
