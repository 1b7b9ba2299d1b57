package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/tpslice/tpslice/vec"
)

// membwReport is membw's --json output.
type membwReport struct {
	ReadGBps  float64 `json:"read_gbps"`
	Threads   int     `json:"threads"`
	BufferMiB int     `json:"buffer_mib"`
	Rounds    int     `json:"rounds"`
	AVX2      bool    `json:"avx2"`
}

// membw measures this machine's read bandwidth, the roofline of memory-bound decode: every
// thread streams its share of a buffer far larger than the caches (vec.ReadSum), and the
// best of several rounds counts.
func membw(args []string, stdout, stderr io.Writer) error {
	var threads, mib, rounds int
	var asJSON bool
	fs := flag.NewFlagSet("membw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&threads, "threads", 2, "goroutines reading at once")
	fs.IntVar(&mib, "mib", 256, "buffer size in MiB (far larger than the last-level cache)")
	fs.IntVar(&rounds, "rounds", 5, "rounds; the best counts")
	fs.BoolVar(&asJSON, "json", false, `print {"read_gbps": …} instead of a line`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if threads < 1 || mib < 1 || rounds < 1 || fs.NArg() > 0 {
		return fmt.Errorf("membw: --threads, --mib and --rounds must be at least 1 (and no arguments)")
	}
	rep := membwReport{ReadGBps: vec.ReadBandwidth(threads, mib<<20, rounds) / 1e9, Threads: threads, BufferMiB: mib, Rounds: rounds, AVX2: vec.Accelerated()}
	if asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	_, err := fmt.Fprintf(stdout, "read bandwidth: %.1f GB/s (%d threads over %d MiB, best of %d)\n", rep.ReadGBps, threads, mib, rounds)
	return err
}
