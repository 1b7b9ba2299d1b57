package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/perf"
)

// planTPs reads --tp for a node of hosts hosts of device.MaxDevices GPUs each: degrees up
// to the node's GPUs (at most device.MaxNodeDevices). Without an explicit --tp, a node of
// several hosts adds its largest degree to the default list.
func planTPs(fs *flag.FlagSet, spec string, hosts int) ([]int, error) {
	if hosts < 1 {
		return nil, fmt.Errorf("--hosts: want at least 1, got %d", hosts)
	}
	top := min(hosts*device.MaxDevices, device.MaxNodeDevices)
	if hosts > 1 && !flagSet(fs, "tp") {
		spec += "," + strconv.Itoa(top)
	}
	return parseIntList("tp", spec, 1, top)
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// tpLabel writes a row's TP degree, with its hosts where it spans several: "16 (2×8)".
func tpLabel(r planRow) string {
	if r.Hosts > 1 {
		return fmt.Sprintf("%d (%d×%d)", r.TP, r.Hosts, r.TP/r.Hosts)
	}
	return strconv.Itoa(r.TP)
}

func rowsSpanHosts(rep planReport) bool {
	for _, r := range rep.Rows {
		if r.Hosts > 1 {
			return true
		}
	}
	return false
}

// printHostsVerdict compares, batch by batch, the fastest TP degree inside one host with
// the fastest across hosts (among the rows that fit; preds are rep's rows), and says in
// one line where crossing hosts stops paying. It prints nothing unless rows of both kinds
// fit.
func printHostsVerdict(w io.Writer, rep planReport, preds []perf.Prediction) {
	if !rowsSpanHosts(rep) {
		return
	}
	type pair struct{ batch, in, across int }
	var pairs []pair
	for _, b := range batchesOf(rep) {
		pr := pair{b, perf.Fastest(preds, b, func(p perf.Prediction) bool { return p.Config.Hosts <= 1 }),
			perf.Fastest(preds, b, func(p perf.Prediction) bool { return p.Config.Hosts > 1 })}
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
			pr.batch, tpLabel(across), across.TokenLatencyMS, tpLabel(in), in.TokenLatencyMS, verb, in.TokenLatencyMS/across.TokenLatencyMS)
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
