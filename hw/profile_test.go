package hw

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
)

func TestProfilesValidateAndOrder(t *testing.T) {
	ps := Profiles()
	require.Equal(t, []string{"h100-sxm", "h200", "a100-sxm", "b200", "l40s-pcie", "pcie"}, Names())
	seen := map[string]bool{}
	for i, p := range ps {
		require.NoError(t, p.Validate(), "profile %d", i)
		require.False(t, seen[p.Name], "duplicate profile %q", p.Name)
		seen[p.Name] = true
		require.Equal(t, Names()[i], p.Name)
		if p.NVLS {
			require.True(t, p.Fabric.HasMulticast(), "%s: NVLS without multicast", p.Name)
		}
	}
}

func TestProfileValues(t *testing.T) {
	tests := []struct {
		name   string
		sms    int
		hbm    float64
		mem    int64
		link   float64
		alpha  time.Duration
		fabric device.Fabric
		nvls   bool
	}{
		{"h100-sxm", 132, 3.35e12, 80e9, 450e9, 1500 * time.Nanosecond, device.NVSwitch, true},
		{"h200", 132, 4.8e12, 141e9, 450e9, 1500 * time.Nanosecond, device.NVSwitch, true},
		{"a100-sxm", 108, 2.039e12, 80e9, 300e9, 1500 * time.Nanosecond, device.NVLinkMesh, false},
		{"b200", 148, 8e12, 180e9, 900e9, 1500 * time.Nanosecond, device.NVSwitch, true},
		{"l40s-pcie", 142, 864e9, 48e9, 32e9, 3 * time.Microsecond, device.PCIe, false},
		{"pcie", 108, 1.935e12, 80e9, 32e9, 3 * time.Microsecond, device.PCIe, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Lookup(tc.name)
			require.NoError(t, err)
			require.Equal(t, tc.name, p.Name)
			require.Equal(t, tc.sms, p.SMs)
			require.Equal(t, tc.hbm, p.HBMBytesPerSec)
			require.Equal(t, tc.mem, p.MemoryBytes)
			require.Equal(t, tc.link, p.LinkBytesPerSec)
			require.Equal(t, tc.alpha, p.Alpha)
			require.Equal(t, tc.fabric, p.Fabric)
			require.Equal(t, tc.nvls, p.NVLS)
			require.NotEmpty(t, p.GPU)
			require.Greater(t, p.LaunchEager, p.LaunchGraph, "graph replay must be cheaper than eager launch")
		})
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"h100-sxm", "h100-sxm"},
		{"  H100-SXM ", "h100-sxm"},
		{"a100-sxm-80g", "a100-sxm"},
		{"A100-SXM-80G", "a100-sxm"},
		{"a100", "a100-sxm"},
		{"l40s", "l40s-pcie"},
		{"pcie", "pcie"},
		{"b200", "b200"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			p, err := Lookup(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, p.Name)
		})
	}
}

func TestLookupUnknownListsNames(t *testing.T) {
	_, err := Lookup("tpu-v5")
	require.Error(t, err)
	for _, name := range append(Names(), "a100-sxm-80g") {
		require.Contains(t, err.Error(), name)
	}
	require.Contains(t, err.Error(), `"tpu-v5"`)
}

func TestProfilesAreCopies(t *testing.T) {
	ps := Profiles()
	ps[0].Name = "changed"
	ps[0].SMs = 1
	require.Equal(t, "h100-sxm", Profiles()[0].Name)
	require.Equal(t, 132, Profiles()[0].SMs)
}

func TestValidateRejects(t *testing.T) {
	base, err := Lookup("h100-sxm")
	require.NoError(t, err)
	tests := []struct {
		name   string
		mutate func(*Profile)
		field  string
	}{
		{"no name", func(p *Profile) { p.Name = "" }, "no name"},
		{"sms", func(p *Profile) { p.SMs = 0 }, "SMs"},
		{"hbm", func(p *Profile) { p.HBMBytesPerSec = -1 }, "HBMBytesPerSec"},
		{"memory", func(p *Profile) { p.MemoryBytes = 0 }, "MemoryBytes"},
		{"link", func(p *Profile) { p.LinkBytesPerSec = 0 }, "LinkBytesPerSec"},
		{"alpha", func(p *Profile) { p.Alpha = -time.Nanosecond }, "Alpha"},
		{"fabric", func(p *Profile) { p.Fabric = 0 }, "Fabric"},
		{"nvls on pcie", func(p *Profile) { p.Fabric = device.PCIe }, "NVLS"},
		{"launch", func(p *Profile) { p.LaunchEager = -1 }, "LaunchEager"},
		{"kernel fixed", func(p *Profile) { p.KernelFixed = -1 }, "KernelFixed"},
		{"flops", func(p *Profile) { p.DenseBF16FLOPS = 0 }, "DenseBF16FLOPS"},
		{"efficiency", func(p *Profile) { p.Calibration.TwoShot.Efficiency = 1.5 }, "Calibration.TwoShot"},
		{"per step", func(p *Profile) { p.Calibration.LL128.PerStep = -1 }, "Calibration.LL128"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			c := *base.Calibration
			p.Calibration = &c
			tc.mutate(&p)
			err := p.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.field)
		})
	}
}

// TestCalibrations: the NVLink profiles carry a calibration (H100's fitted one, the others
// H100's as an estimate or, for H200, as it stands), the PCIe profiles none; a name with
// IdealSuffix is the same profile without it.
func TestCalibrations(t *testing.T) {
	for _, p := range Profiles() {
		if p.Fabric == device.PCIe {
			require.Nil(t, p.Calibration, p.Name)
			continue
		}
		require.NotNil(t, p.Calibration, p.Name)
		require.NotEmpty(t, p.Calibration.Basis, p.Name)
		c := *p.Calibration
		c.Basis = hopperNVLink.Basis
		require.Equal(t, hopperNVLink, c, "%s reuses H100's constants", p.Name)
	}
	for _, name := range []string{"a100-sxm", "b200"} {
		p, err := Lookup(name)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(p.Calibration.Basis, "estimate: "), name)
	}

	calibrated, err := Lookup("h100-sxm")
	require.NoError(t, err)
	ideal, err := Lookup(" H100-ideal ")
	require.NoError(t, err)
	require.Equal(t, "h100-sxm-ideal", ideal.Name)
	require.Nil(t, ideal.Calibration)
	require.NoError(t, ideal.Validate())
	ideal.Name, ideal.Calibration = calibrated.Name, calibrated.Calibration
	require.Equal(t, calibrated, ideal, "only the calibration differs")
	require.Equal(t, 1500*time.Nanosecond, ideal.Alpha, "the seed's α")

	_, err = Lookup("tpu-v5-ideal")
	require.ErrorContains(t, err, `"tpu-v5"`)
}
