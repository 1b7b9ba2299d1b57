package perf

import "time"

// Plan is a sweep's predictions as plan reports them (its --json output): per TP degree
// and batch, the step, the memory fit and what each collective call site runs.
type Plan struct {
	HW          string    `json:"hw"`
	Model       string    `json:"model"`
	Context     int       `json:"context"`
	WeightDType string    `json:"weight_dtype"`
	KVDType     string    `json:"kv_dtype"`
	Collectives string    `json:"collectives"`
	Graphs      bool      `json:"graphs"`
	Rows        []PlanRow `json:"rows"`

	// base and preds are what the rows were made from, for WriteTable.
	base  Config
	preds []Prediction
}

// PlanRow is one prediction of a Plan.
type PlanRow struct {
	TP             int     `json:"tp"`
	Hosts          int     `json:"hosts,omitempty"` // the TP ranks span this many hosts
	Batch          int     `json:"batch"`
	TokenLatencyMS float64 `json:"token_latency_ms"`
	TokensPerSec   float64 `json:"tokens_per_s"`
	Fits           bool    `json:"fits"`
	WeightGB       float64 `json:"weight_gb_per_gpu"`
	KVGB           float64 `json:"kv_gb_per_gpu"`
	CommShare      float64 `json:"comm_share"`
	// AllReduce maps each collective call site ("after o_proj") to what it runs.
	AllReduce   map[string]PlanSite `json:"allreduce"`
	BreakdownMS map[string]float64  `json:"breakdown_ms"`
}

// PlanSite is a collective call site of a PlanRow.
type PlanSite struct {
	Site
	MS float64 `json:"ms"`
	// Share is of the step's kernel time (Prediction.Busy), as comm_share is.
	Share float64 `json:"share"`
}

// NewPlan reports preds, Sweep's predictions of base, one row each in their order.
func NewPlan(base Config, preds []Prediction) Plan {
	rep := Plan{HW: base.Profile.Name, Model: base.Model.Name, Collectives: base.Collectives.String(), Graphs: !base.Eager,
		base: base, preds: preds}
	for _, p := range preds {
		rep.Context, rep.WeightDType, rep.KVDType = p.Config.Context, p.Config.WeightDType.String(), p.Config.KVDType.String()
		row := PlanRow{TP: p.Config.TP, Hosts: p.Config.Hosts, Batch: p.Config.Batch, TokenLatencyMS: ms(p.Step), TokensPerSec: p.TokensPerSec,
			Fits: p.Fits, WeightGB: float64(p.WeightBytes) / 1e9, KVGB: float64(p.KVBytes) / 1e9, CommShare: p.CommShare,
			AllReduce: map[string]PlanSite{}, BreakdownMS: map[string]float64{}}
		for _, s := range p.Sites {
			row.AllReduce["after "+s.After] = PlanSite{Site: s, MS: ms(s.Time), Share: float64(s.Time) / float64(p.Busy())}
		}
		for class, d := range p.ByClass {
			row.BreakdownMS[string(class)] = ms(d)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep
}

// ms is a duration in milliseconds, as the reports print them.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// batches lists the rows' batch sizes, each once, in their first row's order.
func (rep Plan) batches() []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range rep.Rows {
		if !seen[r.Batch] {
			seen[r.Batch] = true
			out = append(out, r.Batch)
		}
	}
	return out
}

// spansHosts reports whether any row spans several hosts.
func (rep Plan) spansHosts() bool {
	for _, r := range rep.Rows {
		if r.Hosts > 1 {
			return true
		}
	}
	return false
}
