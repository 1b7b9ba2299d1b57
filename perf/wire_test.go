package perf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/fused"
)

// TestPredictOnAWire: with the same two-shot, the bf16 and fp8 wires declare the messages
// their bytes (comm.Wire.MessageBytes of the f32 activations) and price them cheaper,
// fp8 cheapest; what forbids a wire is refused.
func TestPredictOnAWire(t *testing.T) {
	p, cfg := lookup(t, "h100-sxm", "llama-3-70b")
	base := Config{Profile: p, Model: cfg, TP: 8, Batch: 64, Algo: comm.TwoShot, Fused: fused.TwoShot}
	var prev Prediction
	for i, w := range comm.Wires {
		c := base
		c.AllReduceWire = w
		pred, err := Predict(c)
		require.NoError(t, err, "%v", w)
		for _, s := range pred.Sites {
			if s.After == "down_proj" {
				require.Equal(t, int64(w.MessageBytes(64*cfg.Hidden, dtype.F32)), s.Message, "%v", w)
			}
		}
		if i > 0 {
			require.Less(t, pred.Step, prev.Step, "%v is cheaper than %v", w, comm.Wires[i-1])
		}
		prev = pred
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Profile: p, Model: cfg, TP: 8, Batch: 1, Collectives: NCCL, AllReduceWire: comm.WireBF16}, "NCCL collectives have no bf16 wire"},
		{Config{Profile: p, Model: cfg, TP: 8, Batch: 1, Algo: comm.NVLS, AllReduceWire: comm.WireFP8}, "algorithm nvls does not run the fp8 wire"},
	} {
		_, err := Predict(c.cfg)
		require.ErrorContains(t, err, c.want)
	}
}
