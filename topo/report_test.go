package topo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewReport: the report names the fabric and profile the topology maps to, and why it
// is simulated; a topology no profile describes leaves the profile out.
func TestNewReport(t *testing.T) {
	pcie, err := Simulated("pcie", 4)
	require.NoError(t, err)
	rep := NewReport(pcie, Machine{}, Placement{})
	require.Equal(t, "pcie", rep.Fabric)
	require.Equal(t, "pcie", rep.Profile)
	require.Equal(t, pcie.Note(), rep.Note)

	unknown := pcie
	unknown.GPUs = append([]GPU(nil), pcie.GPUs...)
	unknown.GPUs[0].Name = "NVIDIA T4"
	_, ok := unknown.Profile()
	require.False(t, ok, "the test needs a topology no profile describes")
	require.Empty(t, NewReport(unknown, Machine{}, Placement{}).Profile)
}
