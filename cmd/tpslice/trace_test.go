package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGenerateTrace runs generate --trace at TP=2 and reads the file as a trace viewer
// would: one named process per rank, named threads, and on both ranks the decode's
// kernels, the fused all-reduce + RMSNorm among them.
func TestGenerateTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	out, _, err := runCLI(t, "generate", "--model", "tiny", "--tp", "2", "--max-tokens", "4", "--temperature", "0", "--trace", path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^# trace: (.+) \((\d+) events\)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the text output names the trace file:\n%s", out)
	require.Equal(t, path, m[1])
	events, err := strconv.Atoi(m[2])
	require.NoError(t, err)
	require.Positive(t, events)

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var tr struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Cat  string         `json:"cat"`
			Ph   string         `json:"ph"`
			Ts   float64        `json:"ts"`
			Dur  *float64       `json:"dur"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
		DisplayTimeUnit string `json:"displayTimeUnit"`
	}
	require.NoError(t, json.Unmarshal(data, &tr))
	require.Equal(t, "ns", tr.DisplayTimeUnit)

	processes := map[int]string{}
	threads := map[[2]int]bool{}
	kernels := 0
	fused := map[string]bool{} // process name → saw allreduce+rmsnorm
	computeKernels := map[string]int{}
	last := -1.0
	for _, ev := range tr.TraceEvents {
		switch ev.Ph {
		case "M":
			switch ev.Name {
			case "process_name":
				processes[ev.Pid] = ev.Args["name"].(string)
			case "thread_name":
				threads[[2]int{ev.Pid, ev.Tid}] = true
			}
		case "X":
			kernels++
			require.NotNil(t, ev.Dur)
			require.GreaterOrEqual(t, ev.Ts, last, "sorted by ts")
			last = ev.Ts
			require.True(t, threads[[2]int{ev.Pid, ev.Tid}], "kernel %q on a named thread", ev.Name)
			require.Contains(t, ev.Args, "grid")
			rank := processes[ev.Pid]
			if strings.HasPrefix(ev.Name, "allreduce+rmsnorm") {
				require.Equal(t, "comm", ev.Cat)
				fused[rank] = true
			}
			if ev.Cat == "compute" {
				computeKernels[rank]++
			}
		}
	}
	require.Equal(t, events, kernels, "the reported count is the kernels in the file")
	require.ElementsMatch(t, []string{"rank 0", "rank 1"}, mapValues(processes))
	require.Equal(t, map[string]bool{"rank 0": true, "rank 1": true}, fused, "an allreduce+rmsnorm kernel on both ranks")
	require.Positive(t, computeKernels["rank 0"])
	require.Equal(t, computeKernels["rank 0"], computeKernels["rank 1"], "the ranks run the same compute kernels")
}

func TestGenerateTraceJSONAndBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	out, errOut, err := runCLI(t, "generate", "--model", "tiny", "--tp", "2", "--max-tokens", "2", "--json", "--trace", path)
	require.NoError(t, err)
	var rep generateReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout stays one JSON object")
	require.Contains(t, errOut, "# trace: "+path+" (")
	require.FileExists(t, path)

	_, _, err = runCLI(t, "generate", "--model", "tiny", "--trace", filepath.Join(t.TempDir(), "no", "such", "dir", "t.json"))
	require.ErrorContains(t, err, "generate: --trace:")
}

func mapValues(m map[int]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestAllreduceBenchTraceSVG: allreduce-bench --trace FILE.svg draws one call of each
// algorithm as an SVG timeline, a lane per rank, and leaves the table on stdout as it was;
// with --model, which measures nothing, --trace is refused.
func TestAllreduceBenchTraceSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "calls.svg")
	out, errOut, err := runCLI(t, "allreduce-bench", "-g", "2", "-b", "1K", "-e", "1K", "--algo", "oneshot,twoshot", "--select", "default",
		"--rounds", "1", "--warmup", "0", "--trace", path)
	require.NoError(t, err)
	require.Contains(t, out, "| oneshot algbw busbw #wrong | twoshot")
	require.Contains(t, errOut, "# trace: "+path+" (4 events)")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	svg := string(data)
	require.True(t, strings.HasPrefix(svg, "<svg "), "an SVG, not the JSON trace")
	for _, want := range []string{"rank 0 · comm", "rank 1 · comm", "<title>allreduce.oneshot: ", "<title>allreduce.twoshot: "} {
		require.Contains(t, svg, want)
	}

	_, _, err = runCLI(t, "allreduce-bench", "--model", "h100-sxm", "--trace", path)
	require.ErrorContains(t, err, "--trace records measured calls; --model measures nothing")
}
