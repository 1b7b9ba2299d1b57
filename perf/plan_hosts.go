package perf

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// writeHostsVerdict compares, batch by batch, the fastest TP degree inside one host with
// the fastest across hosts (among the rows that fit), and says in one line where crossing
// hosts stops paying. It prints nothing unless rows of both kinds fit.
func (rep Plan) writeHostsVerdict(w io.Writer) {
	if !rep.spansHosts() {
		return
	}
	type pair struct{ batch, in, across int }
	var pairs []pair
	for _, b := range rep.batches() {
		pr := pair{b, Fastest(rep.preds, b, func(p Prediction) bool { return p.Config.Hosts <= 1 }),
			Fastest(rep.preds, b, func(p Prediction) bool { return p.Config.Hosts > 1 })}
		if pr.in >= 0 && pr.across >= 0 {
			pairs = append(pairs, pr)
		}
	}
	if len(pairs) == 0 {
		return
	}
	var pays, loses []int
	for _, pr := range pairs {
		in, across := rep.Rows[pr.in], rep.Rows[pr.across]
		verb := "pays"
		if across.TokenLatencyMS >= in.TokenLatencyMS {
			verb = "does not pay"
			loses = append(loses, pr.batch)
		} else {
			pays = append(pays, pr.batch)
		}
		fmt.Fprintf(w, "batch %d: TP %s %.3f ms vs TP %s in one host %.3f ms per token: crossing hosts %s (%.2fx)\n",
			pr.batch, across.tpLabel(), across.TokenLatencyMS, in.tpLabel(), in.TokenLatencyMS, verb, in.TokenLatencyMS/across.TokenLatencyMS)
	}
	switch {
	case len(loses) == 0:
		fmt.Fprintf(w, "verdict: TP across hosts pays at every batch priced (%s)\n", batchList(pays))
	case len(pays) == 0:
		fmt.Fprintf(w, "verdict: TP across hosts never pays here: one host is faster at every batch priced (%s)\n", batchList(loses))
	case slices.Max(pays) < slices.Min(loses):
		fmt.Fprintf(w, "verdict: TP across hosts pays up to batch %d and stops paying from batch %d on (one host is faster at %s)\n",
			slices.Max(pays), slices.Min(loses), batchList(loses))
	default:
		fmt.Fprintf(w, "verdict: TP across hosts pays at batch %s and not at batch %s\n", batchList(pays), batchList(loses))
	}
}

func batchList(bs []int) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = strconv.Itoa(b)
	}
	return strings.Join(s, ", ")
}
