package comm

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

// TestLL128LeavesFlaggedLines: an LL128 ring or tree call, asked for, forced by
// Config.Proto or picked by a table, leaves in the ranks' LL128 regions one 128-byte line
// per 30 elements a rank received, whose last 8-byte word is the piece's flag, each slot's
// lines in a row from its start. Simple and LL calls, which give the same bits, leave that
// region empty: results cannot tell the protocols apart, the buffer can.
func TestLL128LeavesFlaggedLines(t *testing.T) {
	const n, count = 4, 1920 // one piece of one block
	lines := func(elems int) int { return (elems + ll128LineElems - 1) / ll128LineElems }
	// The ring: every rank receives 2(n-1) segments of count/n elements.
	ringLines := n * 2 * (n - 1) * lines(count/n)
	// The tree: each tree's elements go up from every rank but its root and come down to it.
	treeLines := 0
	for tr := range 2 {
		elems := 0
		treeRuns(0, 0, count, tr, func(a, z int) { elems += z - a })
		treeLines += 2 * (n - 1) * lines(elems)
	}
	table := &Table{Source: "test"}
	require.NoError(t, table.Set(TableRow{World: n, Bucket: Bucket(count * 4), Choice: Choice{Tree, LL128}}))
	for _, tc := range []struct {
		name  string
		ch    Choice
		cfg   Config
		lines int // flagged LL128 lines over all ranks
	}{
		{"ring/LL128", Choice{Ring, LL128}, Config{}, ringLines},
		{"tree/LL128", Choice{Tree, LL128}, Config{}, treeLines},
		{"ring with LL128 forced", Choice{Ring, ProtoAuto}, Config{Proto: LL128}, ringLines},
		{"tree/LL128 from a table", Choice{Auto, ProtoAuto}, Config{Table: table}, treeLines},
		{"ring/LL", Choice{Ring, LL}, Config{}, 0},
		{"tree/LL", Choice{Tree, LL}, Config{}, 0},
		{"ring/Simple", Choice{Ring, Simple}, Config{}, 0},
		{"tree/Simple", Choice{Tree, Simple}, Config{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGroup(t, n, device.NVSwitch, tc.cfg)
			ins, outs := g.alloc(t, dtype.F32, count), g.alloc(t, dtype.F32, count)
			Fill(ins, count, 5)
			g.allReduceOnce(t, tc.ch, ins, outs, count)
			checkAllReduce(t, ins, outs, count)
			total := 0
			for r := range n {
				got := ll128Lines(t, g.c, r, 1) // the first piece's flag
				if tc.lines > 0 {
					require.Positive(t, got, "rank %d received nothing over LL128", r)
				}
				total += got
			}
			require.Equal(t, tc.lines, total, "flagged LL128 lines over all ranks")
		})
	}
}

// ll128Lines counts the 128-byte lines of rank r's LL128 region whose flag word is set,
// failing unless each slot's flagged lines come first and carry flag.
func ll128Lines(t *testing.T, c *Communicator, r int, flag uint32) int {
	t.Helper()
	lines := 0
	for b := range c.cfg.Blocks {
		for h := range 2 {
			for i := range protoSlots(c.n) {
				s := c.Rank(r).protoSlot(r, LL128, b, h, i)
				ended := false
				for l := range len(s.u64) / ll128LineWords {
					f := atomic.LoadUint64(&s.u64[l*ll128LineWords+ll128LineWords-1])
					switch {
					case f == 0:
						ended = true
					case ended || f != uint64(flag):
						require.Failf(t, "LL128 line", "rank %d block %d half %d slot %d line %d: flag word %#x; want %#x on the slot's first lines, 0 after",
							r, b, h, i, l, f, flag)
					default:
						lines++
					}
				}
			}
		}
	}
	return lines
}
