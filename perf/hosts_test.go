package perf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// TestTimeAcrossHostsIdeal checks the formulas at one point by hand: 2 hosts × 8 GPUs
// of h100-sxm-ideal (α = 1.5 µs, β = 450 GB/s; NDR: λ = 2.7 µs, 50 GB/s), S = 1 MiB.
func TestTimeAcrossHostsIdeal(t *testing.T) {
	p, err := hw.Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	const s = 1 << 20
	for _, tc := range []struct {
		algo comm.Algo
		op   device.CollectiveOp
		want float64 // µs
	}{
		// 4α + 2·7/8·S/β + λ + S/8/β_net = 6 + 4.0784 + 2.7 + 2.6214
		{comm.TwoLevel, device.OpAllReduce, 15.3998},
		// 2α + max(7S/β, 8S/β_net) + 2λ = 3 + 167.7722 + 5.4
		{comm.OneShot, device.OpAllReduce, 176.1722},
		// 4α + max(2·7/16·S/β, 2·8/16·S/β_net) + 2λ = 6 + 20.9715 + 5.4
		{comm.TwoShot, device.OpAllReduce, 32.3715},
		// 30·max(α, λ) + 30/16·S/β_net = 81 + 39.3216
		{comm.Ring, device.OpAllReduce, 120.3216},
		// ring all-gather: 15·λ + 15·S/β_net = 40.5 + 314.5728
		{comm.Ring, device.OpAllGather, 355.0728},
	} {
		got, err := CostsOf(p, TPSlice).Time(Collective{Op: tc.op, Algo: tc.algo, Ranks: 16, Hosts: 2, Bytes: s})
		require.NoError(t, err)
		require.InDelta(t, tc.want, float64(got)/float64(time.Microsecond), 1e-3, "%v %s", tc.algo, tc.op)
	}
}

// TestTimeAcrossHosts: Hosts 1 is one host; across hosts the two-level
// all-reduce beats every flat algorithm from 256 KiB on (calibrated H100), since the flat
// ones put n-L peers' bytes, or every ring step, on the network; errors name the cause.
func TestTimeAcrossHosts(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	for _, a := range comm.Algos {
		one, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: a, Ranks: 8, Hosts: 1, Bytes: 1 << 20})
		require.NoError(t, err)
		flat, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: a, Ranks: 8, Bytes: 1 << 20})
		require.NoError(t, err)
		require.Equal(t, flat, one, "%v", a)
	}
	for _, bytes := range []int64{256 << 10, 1 << 20, 16 << 20} {
		two, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.TwoLevel, Ranks: 16, Hosts: 2, Bytes: bytes})
		require.NoError(t, err)
		for _, a := range []comm.Algo{comm.OneShot, comm.TwoShot, comm.Ring} {
			flat, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: a, Ranks: 16, Hosts: 2, Bytes: bytes})
			require.NoError(t, err)
			require.Less(t, two, flat, "%v at %d bytes", a, bytes)
		}
		intra, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.TwoShot, Ranks: 8, Bytes: bytes})
		require.NoError(t, err)
		require.Greater(t, two, intra, "crossing hosts costs more than staying in one")
	}

	_, err = CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.TwoLevel, Ranks: 8, Hosts: 1, Bytes: 64})
	require.ErrorContains(t, err, "twolevel needs ranks on several hosts")
	_, err = CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.TwoLevel, Ranks: 15, Hosts: 2, Bytes: 64})
	require.ErrorContains(t, err, "15 ranks do not split evenly over 2 hosts")
	_, err = CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.NVLS, Ranks: 16, Hosts: 2, Bytes: 64})
	require.ErrorContains(t, err, "allreduce nvls is not priced across hosts")
	_, err = CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllGather, Algo: comm.Ring, Proto: comm.LL, Ranks: 16, Hosts: 2, Bytes: 64})
	require.ErrorContains(t, err, "allgather ring under protocol LL: protocols apply to the ring's and the tree's all-reduce and reduce-scatter only")
	pcie, err := hw.Lookup("pcie")
	require.NoError(t, err)
	_, err = CostsOf(pcie, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.TwoLevel, Ranks: 4, Hosts: 2, Bytes: 64})
	require.ErrorIs(t, err, ErrNoNetwork)
}

// TestRingProtocolAcrossHosts: across hosts the ring's protocol scales its in-host step
// and every link's payload share, by hand at three points (h100-sxm, 2 × 8 GPUs); Simple
// and ProtoAuto price alike.
func TestRingProtocolAcrossHosts(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	r := p.Calibration.Ring
	ringBase, ringStep, ringBW := r.Base.Seconds(), r.PerStep.Seconds(), p.LinkBytesPerSec*r.Efficiency
	for _, tc := range []struct {
		proto comm.Proto
		bytes int64
	}{{comm.LL, 4 << 10}, {comm.LL128, 64 << 20}, {comm.Simple, 1 << 20}} {
		pc := protoCostOf(tc.proto)
		s, lat := float64(tc.bytes), p.InterHost.Latency.Seconds()
		want := ringBase + 30*max(ringStep*pc.latency, lat) + 30.0/16*s/(min(ringBW, p.InterHost.BytesPerSec)*pc.bandwidth)
		got, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Proto: tc.proto, Ranks: 16, Hosts: 2, Bytes: tc.bytes})
		require.NoError(t, err)
		require.InDelta(t, want*1e9, float64(got.Nanoseconds()), 1, "%v at %d bytes", tc.proto, tc.bytes)
	}
	simple, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Proto: comm.Simple, Ranks: 16, Hosts: 2, Bytes: 1 << 20})
	require.NoError(t, err)
	auto, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Ranks: 16, Hosts: 2, Bytes: 1 << 20})
	require.NoError(t, err)
	require.Equal(t, simple, auto)
}

// TestModelTableAcrossHosts: the table records its hosts and picks among Offered only.
func TestModelTableAcrossHosts(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	tab := ModelTable(p, 2, []int{16, 15, 4}, 64<<20)
	require.NoError(t, tab.Validate())
	require.Equal(t, 2, tab.Hosts)
	require.Equal(t, []int{4, 16}, tab.Worlds(), "15 does not split over 2 hosts")
	offered := comm.Offered(p.Fabric, p.NVLS, 2, 16)
	for _, r := range tab.Rows {
		require.Contains(t, offered, r.Choice.Algo)
	}
	for _, bytes := range []int64{1 << 20, 64 << 20} {
		a, ok := tab.Pick(16, bytes)
		require.True(t, ok)
		require.Equal(t, comm.TwoLevel, a.Algo, "%d bytes", bytes)
	}
	require.Equal(t, ModelTable(p, 0, []int{8}, 1<<20), ModelTable(p, 1, []int{8}, 1<<20))
}

// TestPredictAcrossHosts: TP 16 over two H100 hosts captures a 16-rank decode graph whose
// all-reduce sites run the algorithms the hosts' table picks, never one it does not
// price; TP beyond one host is refused without hosts, or without a network.
func TestPredictAcrossHosts(t *testing.T) {
	h100, cfg := lookup(t, "h100-sxm", "llama-3-8b")
	pred, err := Predict(Config{Profile: h100, Model: cfg, TP: 16, Hosts: 2, Batch: 64})
	require.NoError(t, err)
	require.Positive(t, pred.Step)
	offered := comm.Offered(h100.Fabric, h100.NVLS, 2, 16)
	var twoLevel bool
	for _, s := range pred.Sites {
		a, err := comm.ParseAlgo(s.Algo)
		require.NoError(t, err)
		require.Contains(t, offered, a, "site after %s", s.After)
		twoLevel = twoLevel || a == comm.TwoLevel
	}
	require.True(t, twoLevel, "the layers' all-reduces of %d KiB run two-level: %+v", 64*cfg.Hidden*4>>10, pred.Sites)
	one, err := Predict(Config{Profile: h100, Model: cfg, TP: 8, Batch: 64})
	require.NoError(t, err)
	require.Less(t, pred.WeightBytes, one.WeightBytes)

	_, err = Predict(Config{Profile: h100, Model: cfg, TP: 16, Batch: 1})
	require.ErrorContains(t, err, "TP degree 16: want 1 to 8 (one node)")
	_, err = Predict(Config{Profile: h100, Model: cfg, TP: 3, Hosts: 2, Batch: 1})
	require.ErrorContains(t, err, "TP degree 3 over 2 hosts: want a multiple of 2 up to 16")
	pcie, _ := lookup(t, "pcie", "llama-3-8b")
	_, err = Predict(Config{Profile: pcie, Model: cfg, TP: 4, Hosts: 2, Batch: 1})
	require.ErrorIs(t, err, ErrNoNetwork)
	nccl, err := Predict(Config{Profile: h100, Model: cfg, TP: 16, Hosts: 2, Batch: 64, Collectives: NCCL})
	require.NoError(t, err)
	for _, s := range nccl.Sites {
		require.Equal(t, "nccl-ring", s.Algo)
	}
	ideal, _ := lookup(t, "h100-sxm-ideal", "llama-3-8b")
	_, err = Predict(Config{Profile: ideal, Model: cfg, TP: 16, Hosts: 2, Batch: 1, Collectives: NCCL})
	require.ErrorContains(t, err, "NCCL across hosts is modelled on calibrated profiles only, not h100-sxm-ideal")
}

// TestNCCLAcrossHosts: Hosts 1 is NCCL on one host; across hosts, by hand at one point (H100's LL
// ring, 2 × 8 ranks, 16 KiB): Base + 28 in-host steps + 2 network hops + 30/16·S over the
// LL bus (0.066 of 450 GB/s, below 8 NICs' 400 GB/s) = 10.8 + 16.8 + 5.4 + 1.0343 µs.
func TestNCCLAcrossHosts(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	for _, proto := range comm.Protos {
		one, err := CostsOf(p, NCCL).Time(Collective{Op: device.OpAllReduce, Proto: proto, Ranks: 8, Hosts: 1, Bytes: 1 << 20})
		require.NoError(t, err)
		flat, _ := CostsOf(p, NCCL).Time(Collective{Op: device.OpAllReduce, Proto: proto, Ranks: 8, Bytes: 1 << 20})
		require.Equal(t, flat, one, "%v", proto)
	}
	got, err := CostsOf(p, NCCL).Time(Collective{Op: device.OpAllReduce, Proto: comm.LL, Ranks: 16, Hosts: 2, Bytes: 16 << 10})
	require.NoError(t, err)
	require.InDelta(t, 34.0343, float64(got)/float64(time.Microsecond), 1e-3)
	ch, best, err := CostsOf(p, NCCL).Choose(Collective{Op: device.OpAllReduce, Ranks: 16, Hosts: 2, Bytes: 64 << 20})
	require.NoError(t, err)
	require.Equal(t, comm.Simple, ch.Proto, "bulk copies win large messages")
	two, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpAllReduce, Algo: comm.TwoLevel, Ranks: 16, Hosts: 2, Bytes: 64 << 20})
	require.NoError(t, err)
	require.Less(t, best, two, "NCCL's rings use every NIC and the faster Simple copies: two-level's two-shot inside the host sustains 0.47 of the link")
	ideal, err := hw.Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	_, _, err = CostsOf(ideal, NCCL).Choose(Collective{Op: device.OpAllReduce, Ranks: 16, Hosts: 2, Bytes: 64})
	require.ErrorContains(t, err, "NCCL across hosts is modelled on calibrated profiles only")
}
