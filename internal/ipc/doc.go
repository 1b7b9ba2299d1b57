// Package ipc is the process side of the rank boundary: how a driver process and the rank
// processes it started find each other, pass handles of shared memory, and learn that one
// of them died.
//
// Listen opens a Unix domain socket (SOCK_SEQPACKET, so every message keeps its bounds) in a
// new directory only this user can enter, and Accept admits a peer only if the kernel
// vouches (SO_PEERCRED) that it runs as this user and is a process the caller allows,
// typically one of its Children. A Conn sends and receives Messages: a kind, a body and
// open files that travel as SCM_RIGHTS, which is how a device.IPCHandle's memory file
// reaches the peer that maps it. A message that arrives short, or without the descriptors
// its header announces, is an error that says so; descriptors that came with a bad message
// are closed.
//
// Children starts processes and watches each through a pidfd (pidfd_open): one poller
// reports a child's exit (its pid, exit status or signal) within milliseconds, however it
// died, and reaps it.
//
// WatchHangups tells that the peer of a connection hung up (closed it, or exited) without
// reading from it, so that the messages stay for the protocol above.
//
// Steps and flags do not go through this package: they live in shared memory (the step
// ring, internal/shmring; a device.SharedBell wakes their waiters). Linux only.
package ipc
