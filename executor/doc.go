// Package executor runs a tensor-parallel group as one process per rank: the driver
// process (the scheduler, the HTTP server) starts a worker process per rank, admits each
// one, sends it the steps and learns at once when one dies. It is what vLLM's
// MultiprocExecutor is to its workers, torchrun to the ranks it launches, and mpirun to
// TensorRT-LLM's MPI ranks; goroutine ranks in the driver's own process (--executor inproc)
// need none of it.
//
// Launch starts the workers: the same binary (os.Executable) with the hidden worker
// subcommand, whose flags name the job, the rank, the world size and the socket to dial.
// The socket (internal/ipc) lives in a private 0700 directory, removed once every worker
// joined. A worker is admitted only if the kernel vouches (SO_PEERCRED) that it runs as this
// user and is one of the children Launch started, and only if its handshake names the rank
// and world size it was started with; anyone else is turned away with an error naming its
// pid and rank. Join is the worker's side: it asks the kernel for SIGKILL when the driver
// dies (PR_SET_PDEATHSIG), checks that the driver is still its parent (it could have died
// before the request), dials, and maps the step ring from the handle it receives.
//
// Steps travel through shared memory, not the socket: DriverSteps broadcasts a
// stepwire.Step to every worker through an internal/shmring ring in a device.SharedMemory
// buffer, and gathers each worker's stepwire.Reply; WorkerSteps is a worker's end. The
// socket stays for control rounds that every worker takes part in at once (Control), such
// as the all-gather of memory handles that builds a communicator across processes.
//
// Supervision: the driver watches each worker through a pidfd and through its socket
// (either reports a death within milliseconds). The first death fails the executor: Err
// names the worker's rank, pid and exit status or signal, every wait on the ring and every
// control round in flight ends with it, and the connections are hung up so that the
// survivors exit. A worker that lives but stays silent (stopped, hung) is bounded by
// Config.ReplyLag: still silent that long after the first answer to a step, it is named
// with its rank and pid, killed, and fails the executor the same way. A step that nobody
// answers (one worker, or all silent) is bounded by Config.StallAfter: a silent worker that
// is not runnable and used no CPU time (/proc/<pid>/stat) that long is stopped or blocked,
// and is named with its state ("T (stopped)") and killed; a busy one is never cut short. A worker exits when
// its driver hangs up (Close asks that way) and is killed by the kernel when its driver
// dies. Close waits a bounded time for the workers to exit, kills the rest and reaps every
// one: no process, socket file or shared mapping is left behind.
//
// A worker runs the job the driver names, from the table RunWorker is given (Jobs: "ping"
// answers every step, for tests and as the shape of a rank's loop). Linux only.
package executor
