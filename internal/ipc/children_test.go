//go:build linux

package ipc

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/tpslice/tpslice/internal/testutil"
)

const exitLimit = 10 * time.Second // bounds a wait for an exit that should come promptly

func itoa(i int) string { return strconv.Itoa(i) }

func newChildren(t *testing.T, onExit func(*Exit)) *Children {
	t.Helper()
	c, err := NewChildren(onExit)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// exits returns a Children whose reports go to a channel.
func exits(t *testing.T) (*Children, chan *Exit) {
	ch := make(chan *Exit, 16)
	return newChildren(t, func(e *Exit) { ch <- e }), ch
}

func next(t *testing.T, ch chan *Exit) *Exit {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(exitLimit):
		t.Fatal("no exit reported")
		return nil
	}
}

func TestChildrenReportExitStatus(t *testing.T) {
	kids, ch := exits(t)
	pid, err := kids.Start("rank 2", testutil.ChildCommand("exit3"))
	require.NoError(t, err)
	e := next(t, ch)
	require.Equal(t, pid, e.Pid)
	require.Equal(t, 3, e.State.ExitCode())
	require.EqualError(t, e, "rank 2 (pid "+itoa(pid)+") exited: exit status 3")
	require.False(t, kids.Has(pid))
	require.True(t, testutil.Reaped(pid), "pid %d is still in the process table", pid)
}

func TestChildrenReportKill(t *testing.T) {
	kids, ch := exits(t)
	pid, err := kids.Start("rank 1", testutil.ChildCommand("sleep"))
	require.NoError(t, err)
	require.True(t, kids.Has(pid))
	start := time.Now()
	require.NoError(t, kids.Signal(pid, unix.SIGKILL))
	e := next(t, ch)
	t.Logf("SIGKILL to report: %v", time.Since(start))
	require.Equal(t, pid, e.Pid)
	ws := e.State.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal())
	require.EqualError(t, e, "rank 1 (pid "+itoa(pid)+") exited: signal: killed")
	require.True(t, testutil.Reaped(pid), "pid %d is still in the process table", pid)
	require.ErrorContains(t, kids.Signal(pid, unix.SIGKILL), "not a living child")
}

func TestChildrenCloseKillsTheLiving(t *testing.T) {
	ch := make(chan *Exit, 16)
	kids, err := NewChildren(func(e *Exit) { ch <- e })
	require.NoError(t, err)
	pids := map[int]bool{}
	for r := range 3 {
		pid, err := kids.Start("rank "+itoa(r), testutil.ChildCommand("sleep"))
		require.NoError(t, err)
		pids[pid] = true
	}
	require.NoError(t, kids.Close())
	require.Len(t, ch, 3, "Close returns once every child was reaped and reported")
	for range 3 {
		e := <-ch
		require.True(t, pids[e.Pid])
		require.True(t, testutil.Reaped(e.Pid), "pid %d is still in the process table", e.Pid)
	}
	_, err = kids.Start("late", testutil.ChildCommand("sleep"))
	require.ErrorContains(t, err, "closed")
	require.NoError(t, kids.Close(), "a second Close is harmless")
}

func TestChildrenStartFailure(t *testing.T) {
	kids, _ := exits(t)
	cmd := testutil.ChildCommand("exit3")
	cmd.Path = "/nonexistent/tpslice-worker"
	_, err := kids.Start("rank 0", cmd)
	require.ErrorContains(t, err, "start rank 0")
	_, err = NewChildren(nil)
	require.ErrorContains(t, err, "no onExit")
}
