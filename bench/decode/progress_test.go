package decode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBenchProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true, cells: 4}
	p.start(2, 8, "measuring")
	p.finish(Row{TP: 2, Batch: 8})
	p.done()
	require.Contains(t, buf.String(), "\r\033[K["+strings.Repeat(".", 24)+"] 0/4 tp=2 batch=8 measuring")
	require.Contains(t, buf.String(), "["+strings.Repeat("#", 6)+strings.Repeat(".", 18)+"] 1/4")
	require.NotContains(t, buf.String(), "\n", "a terminal gets one line, redrawn")
}

// TestProgressWriteKeepsTheBarBelow: a log line written during a run (a load note) clears
// the bar's line first and redraws the bar after it.
func TestProgressWriteKeepsTheBarBelow(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true, cells: 2}
	p.start(2, 0, "loading")
	buf.Reset()
	fmt.Fprintln(p, "tpslice: TP=2: a note")
	require.Equal(t, "\r\033[Ktpslice: TP=2: a note\n\r\033[K["+strings.Repeat(".", 24)+"] 0/2 tp=2 loading 0 tokens", buf.String())
}
