package decode

import (
	"slices"
	"strings"
)

// Report is what a run measured: bench's --json output.
type Report struct {
	Model       string  `json:"model"`
	WeightBytes int64   `json:"weight_bytes"` // summed over ranks; the least of the TP degrees run (replicas add a little)
	ReadGBps    float64 `json:"read_gbps"`    // membw: weight_bytes / read_gbps is a step's floor
	Rows        []Row   `json:"rows"`
}

// Row is one TP degree × batch size.
type Row struct {
	TP     int     `json:"tp"`
	Batch  int     `json:"batch"`
	TTFTMs float64 `json:"ttft_ms"`
	// PromptTokensPerS is the batch's prompt tokens over the time from its submission to
	// its last request's first token: the prefill rate (llama-bench's pp; TokensPerS is
	// its tg).
	PromptTokensPerS float64 `json:"prompt_tokens_per_s"`
	P50Ms            float64 `json:"token_latency_ms_p50"`
	P99Ms            float64 `json:"token_latency_ms_p99"`
	TokensPerS       float64 `json:"tokens_per_s"`
	// E2ETokensPerS is the batch's output tokens over its wall time, from its submission
	// to its last token (TTFT and decode).
	E2ETokensPerS float64 `json:"e2e_tokens_per_s"`
	// OutputTokens are the measured run's output tokens, summed over the batch (Batch ×
	// GenLen unless a request stopped at EOS).
	OutputTokens int     `json:"output_tokens"`
	CommShare    float64 `json:"comm_share"`
	// CommWaitShare is the part of CommShare rank 0 spent blocked on its peers (comm's
	// recorded barrier waits): skew between ranks, not data moving. Under --executor mp
	// both come from rank 0's worker process, as the breakdown does.
	CommWaitShare float64            `json:"comm_wait_share"`
	Breakdown     map[string]float64 `json:"breakdown_ms"`
	// AllReduce names the collective each call site ran, keyed by the kernel whose output
	// it reduces ("after o_proj"), as plan's rows do; empty at TP 1.
	AllReduce map[string]string `json:"allreduce"`
}

// Classes are the breakdown's op classes, in the order the table and the chart show
// them; collective kernels are keyed "<op>.<algo>" (allreduce+rmsnorm.oneshot,
// allgather.oneshot, …) instead, so the algorithm each call site ran shows.
func Classes() []string {
	return []string{"gemm", "attention", "norm", "elementwise", "embedding", "sampling"}
}

const (
	// HostOverhead is the breakdown's key of a step's time outside rank 0's kernels:
	// launches, sampling, scheduling.
	HostOverhead = "host overhead"
	// MinGenLen is the least Options.GenLen: it leaves whole decode steps with the full
	// batch between the last prefill and the first request's end, which is where the
	// breakdown is traced.
	MinGenLen = 8
)

// Keys orders the breakdown keys of every row: the classes, the collectives by name,
// anything else, then the host overhead.
func Keys(rows []Row) []string {
	classes := Classes()
	var colls, other []string
	for _, r := range rows {
		for k := range r.Breakdown {
			switch {
			case slices.Contains(classes, k) || k == HostOverhead || slices.Contains(colls, k) || slices.Contains(other, k):
			case strings.Contains(k, "."):
				colls = append(colls, k)
			default:
				other = append(other, k)
			}
		}
	}
	slices.Sort(colls)
	slices.Sort(other)
	return slices.Concat(classes, colls, other, []string{HostOverhead})
}
