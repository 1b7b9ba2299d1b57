package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pieces is a stream that decodes id i to words[i].
type pieces []string

func (p pieces) Add(id int) string { return p[id] }
func (p pieces) Flush() string     { return "" }

func TestOutputStopStrings(t *testing.T) {
	words := pieces{"Hel", "lo", " wor", "ld", "!", " ST", "OP", " more"}
	cases := []struct {
		name    string
		stops   []string
		ids     []int
		want    string
		stopped bool
	}{
		{"no stops", nil, []int{0, 1, 2, 3}, "Hello world", false},
		{"stop across tokens", []string{"STOP"}, []int{0, 1, 5, 6, 7}, "Hello ", true},
		{"prefix that is not a stop", []string{"STOP"}, []int{0, 5, 1}, "Hel STlo", false},
		{"earliest of two stops", []string{"world", "lo"}, []int{0, 1, 2, 3}, "Hel", true},
		{"empty stop ignored", []string{""}, []int{0, 1}, "Hello", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutput(words, tc.stops, false)
			var emitted strings.Builder
			stopped := false
			for _, id := range tc.ids {
				text, s := o.add(id)
				emitted.WriteString(text)
				if s {
					stopped = true
					break
				}
			}
			emitted.WriteString(o.flush())
			require.Equal(t, tc.stopped, stopped)
			require.Equal(t, tc.want, o.text())
			require.Equal(t, tc.want, emitted.String(), "what was streamed equals the final text")
		})
	}
}

func TestOutputHoldsBackStopPrefix(t *testing.T) {
	o := newOutput(pieces{"abc", "ST", "x"}, []string{"STOP"}, false)
	text, _ := o.add(0)
	require.Equal(t, "abc", text)
	text, _ = o.add(1)
	require.Equal(t, "", text, "ST may start STOP: held back")
	text, _ = o.add(2)
	require.Equal(t, "STx", text)
}
