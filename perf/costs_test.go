package perf

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/comm"
	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/hw"
)

// alphaBeta is the idealised α-β model of α and β: tpslice's collectives on a profile
// without a calibration, which offers NVLS.
func alphaBeta(alpha time.Duration, beta float64) Costs {
	return CostsOf(hw.Profile{Name: "α-β", Alpha: alpha, LinkBytesPerSec: beta, Fabric: device.NVSwitch, NVLS: true}, TPSlice)
}

// allReduce is an all-reduce of bytes per rank over n ranks with algorithm a on one host.
func allReduce(a comm.Algo, n int, bytes int64) Collective {
	return Collective{Op: device.OpAllReduce, Algo: a, Ranks: n, Bytes: bytes}
}

// idealised is p without its calibration: the α-β model of its α and β.
func idealised(p hw.Profile) hw.Profile {
	p.Calibration = nil
	return p
}

// oneShotTwoShotCrossover is the message size S* in bytes above which the α-β model's
// two-shot beats one-shot: S* = 2αβ / ((n-1)(1 - 2/n)), about 257 KB at n = 8, α = 1.5 µs,
// β = 450e9 B/s. For n ≤ 2 one-shot never loses and the result is +Inf.
func oneShotTwoShotCrossover(n int, alpha time.Duration, beta float64) float64 {
	if n <= 2 {
		return math.Inf(1)
	}
	nf := float64(n)
	return 2 * alpha.Seconds() * beta / ((nf - 1) * (1 - 2/nf))
}

// TestCollectiveRejects: a request the model cannot price fails, naming the field.
func TestCollectiveRejects(t *testing.T) {
	h100, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	pcie, err := hw.Lookup("pcie")
	require.NoError(t, err)
	ok := Collective{Op: device.OpAllReduce, Algo: comm.Ring, Ranks: 8, Bytes: 1 << 20}
	for _, tc := range []struct {
		name  string
		costs Costs
		edit  func(*Collective)
		want  string
	}{
		{"op", CostsOf(h100, TPSlice), func(c *Collective) { c.Op = "broadcast" }, `Op "broadcast"`},
		{"ranks", CostsOf(h100, TPSlice), func(c *Collective) { c.Ranks = 0 }, "Ranks: world size n = 0"},
		{"bytes", CostsOf(h100, TPSlice), func(c *Collective) { c.Bytes = -1 }, "Bytes: message size -1 bytes"},
		{"hosts", CostsOf(h100, TPSlice), func(c *Collective) { c.Hosts = -1 }, "Hosts = -1"},
		{"uneven hosts", CostsOf(h100, TPSlice), func(c *Collective) { c.Hosts = 3 }, "Hosts: 8 ranks do not split evenly over 3 hosts"},
		{"no network", CostsOf(pcie, TPSlice), func(c *Collective) { c.Hosts = 2 }, "no network between hosts"},
		{"proto", CostsOf(h100, TPSlice), func(c *Collective) { c.Proto = comm.Simple + 1 }, "Proto"},
		{"auto", CostsOf(h100, TPSlice), func(c *Collective) { c.Algo = comm.Auto }, "Algo auto: want ring, oneshot"},
		{"unknown algo", CostsOf(h100, TPSlice), func(c *Collective) { c.Algo = 99 }, "Algo algo(99)"},
		{"NCCL's algo", CostsOf(h100, NCCL), func(c *Collective) { c.Algo = comm.OneShot }, "Algo oneshot: NCCL runs the ring"},
		{"NCCL's proto", CostsOf(pcie, NCCL), func(c *Collective) { c.Proto = comm.Simple }, "NCCL's ring under protocol Simple is not modelled on pcie"},
		{"alpha", CostsOf(hw.Profile{Name: "x", Alpha: -1, LinkBytesPerSec: 1}, TPSlice), func(*Collective) {}, `profile "x": alpha = -1ns`},
		{"beta", CostsOf(hw.Profile{Name: "x", LinkBytesPerSec: math.Inf(1)}, TPSlice), func(*Collective) {}, `profile "x": beta = +Inf B/s`},
		{"zero costs", Costs{}, func(*Collective) {}, "the zero Costs prices nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := tc.costs.Time(c)
			require.ErrorContains(t, err, tc.want)
			_, _, err = tc.costs.Choose(Collective{Op: c.Op, Ranks: c.Ranks, Hosts: c.Hosts, Bytes: c.Bytes, Proto: c.Proto})
			if tc.name != "auto" && tc.name != "unknown algo" && tc.name != "NCCL's algo" {
				require.Error(t, err, "Choose checks the same fields")
			}
		})
	}
}

// TestNCCLWithoutProtocolIsItsFastest: NCCL's ring without a protocol is priced with the
// one its tuner picks, Choose's.
func TestNCCLWithoutProtocolIsItsFastest(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	nccl := CostsOf(p, NCCL)
	for _, hosts := range []int{0, 2} {
		for _, bytes := range []int64{128, 256 << 10, 16 << 20} {
			c := Collective{Op: device.OpAllReduce, Ranks: 16, Hosts: hosts, Bytes: bytes}
			picked, want, err := nccl.Choose(c)
			require.NoError(t, err)
			require.Equal(t, comm.Ring, picked.Algo)
			got, err := nccl.Time(c)
			require.NoError(t, err)
			require.Equal(t, want, got, "%d hosts, %d B", hosts, bytes)
			for _, proto := range comm.Protos {
				c.Proto = proto
				other, err := nccl.Time(c)
				require.NoError(t, err)
				require.GreaterOrEqual(t, other, got, "%v, %d hosts, %d B", proto, hosts, bytes)
			}
		}
	}
}

// TestChooseProtocolAcrossHosts: across hosts, as on one, a calibrated profile's ring gets
// its fastest protocol: LL for a small message where the network's latency does not pace
// every step.
func TestChooseProtocolAcrossHosts(t *testing.T) {
	p, err := hw.Lookup("h100-sxm")
	require.NoError(t, err)
	p.InterHost.Latency = 0
	for _, hosts := range []int{0, 2} {
		c, _, err := CostsOf(p, TPSlice).Choose(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Ranks: 16, Hosts: hosts, Bytes: 4 << 10})
		require.NoError(t, err)
		require.Equal(t, comm.LL, c.Proto, "%d hosts", hosts)
	}
	ideal, err := hw.Lookup("h100-sxm-ideal")
	require.NoError(t, err)
	c, _, err := CostsOf(ideal, TPSlice).Choose(Collective{Op: device.OpAllReduce, Algo: comm.Ring, Ranks: 8, Bytes: 4 << 10})
	require.NoError(t, err)
	require.Equal(t, comm.ProtoAuto, c.Proto, "the α-β model chooses algorithms, not protocols")
}

// TestReduceScatterProtocol: a reduce-scatter on the ring takes its protocol on the α-β
// model as on a calibrated one: LL's steps are cheaper, its bytes dearer.
func TestReduceScatterProtocol(t *testing.T) {
	for _, name := range []string{"h100-sxm", "h100-sxm-ideal"} {
		p, err := hw.Lookup(name)
		require.NoError(t, err)
		at := func(proto comm.Proto, bytes int64) time.Duration {
			d, err := CostsOf(p, TPSlice).Time(Collective{Op: device.OpReduceScatter, Algo: comm.Ring, Proto: proto, Ranks: 8, Bytes: bytes})
			require.NoError(t, err)
			return d
		}
		require.Less(t, at(comm.LL, 1<<10), at(comm.Simple, 1<<10), name)
		require.Greater(t, at(comm.LL, 64<<20), at(comm.Simple, 64<<20), name)
	}
}
