//go:build linux

package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// Exit is how a child process ended: what Children reports once it is gone. As an error it
// names the child, its pid and its exit status or the signal that killed it.
type Exit struct {
	Name  string // what Start called it ("rank 3")
	Pid   int
	State *os.ProcessState // exit status or signal, resource usage
}

// Error says which child ended and how: "rank 1 (pid 4242) exited: signal: killed".
func (e *Exit) Error() string {
	return fmt.Sprintf("%s (pid %d) exited: %v", e.Name, e.Pid, e.State)
}

// Children starts child processes and reports each one's exit as it happens. Each child is
// watched through a pidfd (pidfd_open) that one poller goroutine waits on, together with an
// eventfd that tells it the set changed; a pidfd becomes readable the moment its process
// ends, however it ends (an exit, a crash, SIGKILL, the OOM killer), and the poller then reaps
// it and reports it.
type Children struct {
	onExit func(*Exit)
	wake   int           // eventfd: a write interrupts the poller's wait
	done   chan struct{} // closed when the poller returns

	mu      sync.Mutex
	live    map[int]*child // by pid: started and not yet reaped
	closing bool
	err     error // why the poller stopped early
}

type child struct {
	name  string
	cmd   *exec.Cmd
	pidfd int
}

// NewChildren starts the poller. onExit is called from it once per child, after the child
// was reaped, including the children Close kills; it must not block for long.
func NewChildren(onExit func(*Exit)) (*Children, error) {
	if onExit == nil {
		return nil, fmt.Errorf("ipc: children: no onExit callback")
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("ipc: children: eventfd: %w", err)
	}
	c := &Children{onExit: onExit, wake: wake, done: make(chan struct{}), live: map[int]*child{}}
	go c.poll()
	return c, nil
}

// Start starts cmd, which must not have been started, and watches it under name. The pid
// counts as a child (Has) from before the process runs, so a child that connects at once is
// admitted. Give cmd files (os.Stderr), not writers, for its output: the report waits for
// exec's copying goroutines, which a grandchild holding the pipe would keep open.
func (c *Children) Start(name string, cmd *exec.Cmd) (pid int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.err != nil {
		return 0, fmt.Errorf("ipc: start %s: the children are closed (%v)", name, c.err)
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("ipc: start %s: %w", name, err)
	}
	pid = cmd.Process.Pid
	// Safe from pid reuse: only the poller reaps, so pid names this child, running or not.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("ipc: start %s: pidfd_open of pid %d: %w", name, pid, err)
	}
	c.live[pid] = &child{name: name, cmd: cmd, pidfd: pidfd}
	c.ring()
	return pid, nil
}

// Has reports whether pid is a child that has not been reaped: the rule Listen takes.
func (c *Children) Has(pid int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.live[pid]
	return ok
}

// Signal sends sig to child pid through its pidfd, which cannot reach another process that
// reused the pid.
func (c *Children) Signal(pid int, sig unix.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.live[pid]
	if !ok {
		return fmt.Errorf("ipc: signal %v to pid %d: not a living child", sig, pid)
	}
	if err := unix.PidfdSendSignal(k.pidfd, sig, nil, 0); err != nil {
		return fmt.Errorf("ipc: signal %v to %s (pid %d): %w", sig, k.name, pid, err)
	}
	return nil
}

// Close kills the children still alive (SIGKILL), waits until the poller has reaped and
// reported every one, and stops it. It returns the error that stopped the poller early, if
// one did.
func (c *Children) Close() error {
	c.mu.Lock()
	first := !c.closing
	if first {
		c.closing = true
		for _, k := range c.live {
			_ = unix.PidfdSendSignal(k.pidfd, unix.SIGKILL, nil, 0) // fails only for one already gone
		}
		c.ring()
	}
	c.mu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if first { // the eventfd outlives the poller, so that no ring writes to a reused descriptor
		_ = unix.Close(c.wake)
	}
	return c.err
}

// ring interrupts the poller, so that it looks at the set of children again.
func (c *Children) ring() {
	_, _ = unix.Write(c.wake, binary.NativeEndian.AppendUint64(nil, 1))
}

// poll waits on every child's pidfd and the eventfd until Close has reaped every child.
func (c *Children) poll() {
	defer close(c.done)
	for {
		c.mu.Lock()
		if c.closing && len(c.live) == 0 {
			c.mu.Unlock()
			return
		}
		fds := []unix.PollFd{{Fd: int32(c.wake), Events: unix.POLLIN}}
		kids := make([]*child, 0, len(c.live))
		for _, k := range c.live {
			fds = append(fds, unix.PollFd{Fd: int32(k.pidfd), Events: unix.POLLIN})
			kids = append(kids, k)
		}
		c.mu.Unlock()
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			c.stop(fmt.Errorf("ipc: children: poll: %w", err))
			return
		}
		if fds[0].Revents != 0 {
			var buf [8]byte
			_, _ = unix.Read(c.wake, buf[:]) // resets the count; the next ring makes it readable again
		}
		for i, k := range kids {
			if fds[i+1].Revents != 0 {
				c.reap(k)
			}
		}
	}
}

// reap collects a child whose pidfd became readable, which it does only once the process has
// ended, and reports it.
func (c *Children) reap(k *child) {
	_ = k.cmd.Wait() // returns at once; its error restates the exit state kept in ProcessState
	c.mu.Lock()
	delete(c.live, k.cmd.Process.Pid)
	c.mu.Unlock()
	_ = unix.Close(k.pidfd)
	c.onExit(&Exit{Name: k.name, Pid: k.cmd.Process.Pid, State: k.cmd.ProcessState})
}

// stop ends the poller after an error it cannot recover from: the children are killed and
// reaped without it, and reported, so that no one waits for a death that is never told.
func (c *Children) stop(err error) {
	c.mu.Lock()
	c.err = err
	kids := make([]*child, 0, len(c.live))
	for _, k := range c.live {
		_ = unix.PidfdSendSignal(k.pidfd, unix.SIGKILL, nil, 0)
		kids = append(kids, k)
	}
	c.mu.Unlock()
	for _, k := range kids {
		c.reap(k)
	}
}
