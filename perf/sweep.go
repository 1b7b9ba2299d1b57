package perf

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
)

// Sweep predicts base at every TP degree of tps and batch size of batches, TP degree by
// TP degree (plan's rows). A degree above device.MaxDevices spans ⌈TP/8⌉ hosts of the
// profile (Config.Hosts); base's TP, Batch and Hosts are ignored. The error names the
// degree and batch that failed.
func Sweep(base Config, tps, batches []int) ([]Prediction, error) {
	var preds []Prediction
	for _, n := range tps {
		for _, b := range batches {
			c := base
			c.TP, c.Batch, c.Hosts = n, b, hostsOf(n)
			p, err := Predict(c)
			if err != nil {
				return nil, fmt.Errorf("TP %d batch %d: %w", n, b, err)
			}
			preds = append(preds, p)
		}
	}
	return preds, nil
}

// hostsOf is how many hosts of device.MaxDevices GPUs a TP degree spans: ⌈tp/8⌉, 0 for
// one host (Config's zero value).
func hostsOf(tp int) int {
	if h := (tp + device.MaxDevices - 1) / device.MaxDevices; h > 1 {
		return h
	}
	return 0
}

// Fastest returns the index in preds of the prediction of batch size batch that fits the
// GPU's memory and has the shortest step, among those keep accepts (nil: all); -1 when
// none fits. The first of equal steps wins.
func Fastest(preds []Prediction, batch int, keep func(Prediction) bool) int {
	best := -1
	for i, p := range preds {
		if p.Config.Batch == batch && p.Fits && (keep == nil || keep(p)) && (best < 0 || p.Step < preds[best].Step) {
			best = i
		}
	}
	return best
}
