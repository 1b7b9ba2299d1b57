package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNUMAPrediction: numa prices each placement of medium at TP 2 on the Xeon server,
// and names a bad flag.
func TestNUMAPrediction(t *testing.T) {
	out, _, err := runCLI(t, "numa")
	require.NoError(t, err)
	require.Contains(t, out, "medium: 411M parameters in bf16, 0.82 GB of weights")
	require.Contains(t, out, "not a measurement")
	require.Regexp(t, `2 +a rank's weights on its node +1\.34 ms +747 +1\.00× +socket 0's memory`, out)
	require.Regexp(t, `2 +all weights on node 0, ranks on both +3\.21 ms +311 +2\.40× +the link from socket 0 to 1`, out)
	for _, tc := range []struct{ args []string }{{[]string{"--server", "2x-pentium"}}, {[]string{"--dtype", "q8_0"}}, {[]string{"--tp", "9"}}} {
		_, _, err := runCLI(t, append([]string{"numa"}, tc.args...)...)
		require.ErrorContains(t, err, "numa: --"+strings.TrimPrefix(tc.args[0], "--"))
	}
}
