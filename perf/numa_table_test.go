package perf

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/hw"
	"github.com/tpslice/tpslice/models"
)

// TestWriteNUMATable: four heading lines, then per TP degree a row per placement in
// NUMAPlacements' order, each against the degree's rank-a-node step.
func TestWriteNUMATable(t *testing.T) {
	s := hw.TwoSockets()[0]
	cfg, err := models.Preset("medium")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteNUMATable(&b, s, cfg, dtype.BF16, []int{2, 4}))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.True(t, strings.HasPrefix(lines[0], "medium: 411M parameters in bf16, 0.82 GB of weights"), lines[0])
	require.True(t, strings.HasPrefix(lines[1], s.CPU+": "), lines[1])
	require.Empty(t, lines[3])
	require.Len(t, lines, 5+2*len(NUMAPlacements))
	for i, line := range lines[5:] {
		n, p := []string{"2", "4"}[i/len(NUMAPlacements)], NUMAPlacements[i%len(NUMAPlacements)]
		require.True(t, strings.HasPrefix(line, n+" "), line)
		require.Contains(t, line, p.String())
		if p == PerNode {
			require.Contains(t, line, " 1.00× ")
		}
	}
}
