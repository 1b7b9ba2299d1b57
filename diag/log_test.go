package diag

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func env(level, subsys string) func(string) string {
	return func(k string) string {
		switch k {
		case EnvLevel:
			return level
		case EnvSubsys:
			return subsys
		}
		return ""
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		level, subsys string
		want          []Subsys // enabled at Info
		wantLevel     Level
		err           string
	}{
		{level: "", want: nil},
		{level: "INFO", want: subsystems, wantLevel: Info},
		{level: "info", subsys: "graph,coll", want: []Subsys{Graph, Coll}, wantLevel: Info},
		{level: "TRACE", subsys: "ALL", want: subsystems, wantLevel: Trace},
		{level: "INFO", subsys: "^INIT,TUNING", want: []Subsys{Graph, Coll, Fault}, wantLevel: Info},
		{level: "WARN", subsys: "FAULT", wantLevel: Warn},
		{level: "LOUD", err: `TPSLICE_DEBUG="LOUD": want WARN, INFO or TRACE`},
		{level: "INFO", subsys: "INIT,NET", err: `TPSLICE_DEBUG_SUBSYS: unknown subsystem "NET"`},
		{level: "INFO", subsys: "^ALL", err: "leaves nothing"},
		{level: "INFO", subsys: "^INIT,TUNING,GRAPH,COLL,FAULT", err: "leaves nothing"},
	} {
		t.Run(tc.level+"/"+tc.subsys, func(t *testing.T) {
			l, err := FromEnv(env(tc.level, tc.subsys), &bytes.Buffer{})
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if tc.level == "" {
				require.Nil(t, l)
				return
			}
			require.Equal(t, tc.wantLevel, l.level)
			for _, s := range subsystems {
				want := false
				for _, w := range tc.want {
					want = want || w == s
				}
				require.Equal(t, want, l.Enabled(Info, s), "%s at INFO", s)
			}
		})
	}
}

func TestLogf(t *testing.T) {
	var out bytes.Buffer
	l := New(&out, Info, Graph)
	l.Infof(Graph, "bucket %d captured\n", 4)
	l.Infof(Init, "not enabled")
	l.Logf(Trace, Graph, "above the level")
	l.Warnf(Graph, "a warning")
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 2, out.String())
	require.Regexp(t, `^tpslice:\d+ INFO GRAPH bucket 4 captured$`, lines[0])
	require.Regexp(t, `^tpslice:\d+ WARN GRAPH a warning$`, lines[1])

	var nilLogger *Logger
	require.False(t, nilLogger.Enabled(Warn, Fault))
	nilLogger.Infof(Init, "a nil logger writes nothing") // and does not panic
}
