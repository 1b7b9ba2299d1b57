package comm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
)

func TestParseProto(t *testing.T) {
	for _, p := range append([]Proto{ProtoAuto}, Protos...) {
		got, err := ParseProto(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got)
		text, err := p.MarshalText()
		require.NoError(t, err)
		var back Proto
		require.NoError(t, back.UnmarshalText(text))
		require.Equal(t, p, back)
	}
	got, err := ParseProto(" ll128 ")
	require.NoError(t, err)
	require.Equal(t, LL128, got, "NCCL_PROTO's names in any case")
	_, err = ParseProto("LL64")
	require.ErrorContains(t, err, `unknown protocol "LL64" (want auto, LL, LL128 or Simple)`)
	require.Equal(t, "ring/LL", Choice{Ring, LL}.String())
	require.Equal(t, "tree", Choice{Tree, ProtoAuto}.String())
	require.Equal(t, "oneshot", Choice{OneShot, LL}.String(), "one-shot takes no protocol")
	require.Equal(t, []Choice{{OneShot, 0}, {Tree, LL}, {Tree, LL128}, {Tree, Simple}}, Choices([]Algo{OneShot, Tree}))
}

// TestProtoSelection: the configuration's protocol wins over $TPSLICE_PROTO, the
// environment over the table, the table over Simple; a protocol only ever applies to
// the ring and the tree, and a bad value is refused naming where it came from.
func TestProtoSelection(t *testing.T) {
	g := newGroup(t, 4, device.NVSwitch, Config{})
	require.Equal(t, Simple, g.c.PickProto(Ring, 1024))
	require.Equal(t, Simple, g.c.PickProto(Tree, 1024))
	require.Equal(t, ProtoAuto, g.c.PickProto(OneShot, 1024))
	table := &Table{Source: "test"}
	require.NoError(t, table.Set(TableRow{World: 4, Bucket: Bucket(1024), Choice: Choice{Tree, LL}}))
	require.NoError(t, table.Set(TableRow{World: 4, Bucket: Bucket(1 << 20), Choice: Choice{Ring, LL128}}))
	g.c.SetTable(table)
	require.Equal(t, Choice{Tree, LL}, g.c.Pick(1000))
	require.Equal(t, Choice{Ring, LL128}, g.c.Pick(1<<20))
	require.Equal(t, Simple, g.c.PickProto(Ring, 1000), "the row's protocol is for the row's algorithm")

	t.Setenv(EnvProto, "ll")
	c, err := New(g.node, Config{Table: table})
	require.NoError(t, err)
	require.Equal(t, Choice{Ring, LL}, c.Pick(1<<20))
	require.NoError(t, c.Close())
	c, err = New(g.node, Config{Table: table, Proto: Simple})
	require.NoError(t, err)
	require.Equal(t, Choice{Tree, Simple}, c.Pick(1000))
	require.NoError(t, c.Close())

	t.Setenv(EnvProto, "LL256")
	_, err = New(g.node, Config{})
	require.ErrorContains(t, err, `$TPSLICE_PROTO: unknown protocol "LL256"`)
	_, err = New(g.node, Config{Proto: Proto(7)})
	require.ErrorContains(t, err, "Config.Proto: unknown protocol proto(7)")

	bufs := g.alloc(t, dtype.F32, 8)
	err = g.c.Rank(0).AllReduceProto(g.streams[0], OneShot, LL, bufs[0], bufs[0], 8)
	require.ErrorContains(t, err, "comm: rank 0 allreduce: protocol LL applies to ring and tree, not oneshot")
}

// TestLoadTableProtocols: rows with a protocol load and save; a table written before
// protocols were a choice still loads (its rows run Simple); a bad
// protocol fails naming the file and the row.
func TestLoadTableProtocols(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json")
	tab := &Table{Source: "tuned:x"}
	require.NoError(t, tab.Set(TableRow{World: 8, Bucket: 10, Choice: Choice{Ring, LL}}))
	require.NoError(t, tab.Set(TableRow{World: 8, Bucket: 20, Choice: Choice{TwoShot, ProtoAuto}}))
	require.NoError(t, SaveTable(path, tab))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var raw struct{ Rows []map[string]any }
	require.NoError(t, json.Unmarshal(data, &raw))
	require.Equal(t, "LL", raw.Rows[0]["proto"])
	require.NotContains(t, raw.Rows[1], "proto", "rows without a protocol are written as before")
	got, err := LoadTable[Choice](path)
	require.NoError(t, err)
	require.Equal(t, tab.Rows, got.Rows)

	old := `{"source":"tuned:old","rows":[{"world":8,"bucket":10,"algo":"ring"}]}`
	require.NoError(t, os.WriteFile(path, []byte(old), 0o644))
	got, err = LoadTable[Choice](path)
	require.NoError(t, err)
	require.Equal(t, []TableRow{{World: 8, Bucket: 10, Choice: Choice{Algo: Ring}}}, got.Rows)

	for body, want := range map[string]string{
		`{"source":"s","rows":[{"world":8,"bucket":10,"algo":"ring","proto":"LL64"}]}`:  `row 0 (world 8, bucket 10): unknown protocol "LL64"`,
		`{"source":"s","rows":[{"world":8,"bucket":10,"algo":"oneshot","proto":"LL"}]}`: "protocol LL given for oneshot, which takes none",
	} {
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		_, err := LoadTable[Choice](path)
		require.ErrorContains(t, err, path)
		require.ErrorContains(t, err, want)
	}
}
