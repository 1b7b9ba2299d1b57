package executor

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
)

// WorkerCommand is the hidden subcommand of the binary that runs a worker: Launch starts
// "PROGRAM worker --job J --rank R --world N --socket PATH".
const WorkerCommand = "worker"

// WorkerConfig is what a worker is told on its command line.
type WorkerConfig struct {
	Job    string // the job to run (a key of the table RunWorker is given)
	Rank   int    // this worker's rank, 0 to World−1
	World  int    // how many workers the driver started
	Socket string // the driver's socket
}

// args is the command line after WorkerCommand that ParseWorkerArgs reads back.
func (w WorkerConfig) args() []string {
	return []string{"--job", w.Job, "--rank", strconv.Itoa(w.Rank), "--world", strconv.Itoa(w.World), "--socket", w.Socket}
}

// ParseWorkerArgs reads a worker's command line (after WorkerCommand). A worker is started
// by a driver (--executor mp), never by hand: without --socket it refuses to run and says so.
func ParseWorkerArgs(args []string) (WorkerConfig, error) {
	var w WorkerConfig
	fs := flag.NewFlagSet(WorkerCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&w.Job, "job", "", "the job to run")
	fs.IntVar(&w.Rank, "rank", -1, "this worker's rank")
	fs.IntVar(&w.World, "world", 0, "how many workers the driver started")
	fs.StringVar(&w.Socket, "socket", "", "the driver's socket")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			err = errors.New("a worker has no help: a driver starts it (--executor mp)")
		}
		return w, fmt.Errorf("worker: %w", err)
	}
	switch {
	case fs.NArg() > 0:
		return w, fmt.Errorf("worker: unexpected argument %q", fs.Arg(0))
	case w.Socket == "":
		return w, fmt.Errorf("worker: no --socket: a worker is started by a driver process (--executor mp), not by hand")
	case w.World < 1 || w.Rank < 0 || w.Rank >= w.World:
		return w, fmt.Errorf("worker: --rank %d of --world %d: want 0 ≤ rank < world", w.Rank, w.World)
	case w.Job == "":
		return w, fmt.Errorf("worker: no --job")
	}
	return w, nil
}
