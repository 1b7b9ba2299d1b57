package collective

import (
	"time"

	"github.com/tpslice/tpslice/comm"
)

// Report is allreduce-bench's --json output (documented in docs/cli.md).
type Report struct {
	Op       string   `json:"op"` // allreduce, reducescatter or allgather
	Ranks    int      `json:"ranks"`
	Hosts    int      `json:"hosts,omitempty"` // the ranks split over this many hosts (--hosts > 1)
	DType    string   `json:"dtype"`
	Wire     string   `json:"wire,omitempty"`  // --allreduce-dtype, when not exact
	Source   string   `json:"source"`          // "measured" or "model:PROFILE"
	Model    string   `json:"model,omitempty"` // what the model's constants rest on (model output only)
	Fabric   string   `json:"fabric,omitempty"`
	Selector string   `json:"selector,omitempty"` // where auto's choices come from
	NVLS     string   `json:"nvls,omitempty"`     // "emulated" when measured on the CPU runtime
	CPUs     []string `json:"cpus,omitempty"`     // where each rank's worker ran, where --cpu-affinity pinned them
	Rows     []Row    `json:"rows"`
}

type Row struct {
	SizeBytes int64    `json:"size_bytes"`
	Count     int      `json:"count"`
	Auto      string   `json:"auto"`
	Results   []Result `json:"results"`
	// FastestWithoutNVLS is the model's fastest peer-buffer algorithm (model output only),
	// DESIGN.md's "fastest without NVLS" column.
	FastestWithoutNVLS string `json:"fastest_without_nvls,omitempty"`
	// NCCL is the protocol NCCL's tuner picks for its ring: the fastest (model output only).
	NCCL string `json:"nccl,omitempty"`
}

type Result struct {
	Algo      string  `json:"algo"`
	TimeUS    float64 `json:"time_us"`
	AlgBWGBps float64 `json:"algbw_gbps"`
	BusBWGBps float64 `json:"busbw_gbps"`
	Wrong     *int    `json:"wrong,omitempty"` // with --check only
	// Error is the distance to the exact wire's result (--check with --allreduce-dtype).
	Error *comm.WireError `json:"error,omitempty"`
}

// WireName is the report's name of a wire: empty for the exact one.
func WireName(w comm.Wire) string {
	if w == comm.WireExact {
		return ""
	}
	return w.String()
}

// result is a call of name on size bytes that took d, with its bandwidths as nccl-tests
// counts them (none in no time: the model's single rank).
func (b Op) result(name string, size int64, d time.Duration) Result {
	r := Result{Algo: name, TimeUS: float64(d.Nanoseconds()) / 1e3}
	if d > 0 {
		algbw := float64(size) / d.Seconds() / 1e9
		r.AlgBWGBps, r.BusBWGBps = algbw, comm.OpBusBW(b.Kind, algbw, b.N)
	}
	return r
}
