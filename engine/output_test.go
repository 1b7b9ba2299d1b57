package engine

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pieces is a stream that decodes id i to words[i].
type pieces []string

func (p pieces) Add(id int) string { return p[id] }
func (p pieces) Flush() string     { return "" }

func TestOutputStopStrings(t *testing.T) {
	words := pieces{"Hel", "lo", " wor", "ld", "!", " ST", "OP", " more", "abcd"}
	cases := []struct {
		name    string
		stops   []string
		include bool
		ids     []int
		want    string
		stopped bool
	}{
		{"no stops", nil, false, []int{0, 1, 2, 3}, "Hello world", false},
		{"stop across tokens", []string{"STOP"}, false, []int{0, 1, 5, 6, 7}, "Hello ", true},
		{"prefix that is not a stop", []string{"STOP"}, false, []int{0, 5, 1}, "Hel STlo", false},
		{"earliest of two stops", []string{"world", "lo"}, false, []int{0, 1, 2, 3}, "Hel", true},
		// Both end in the token "abcd": "bc" is completed first, byte by byte.
		{"first completed in one token", []string{"abcd", "bc"}, false, []int{8}, "a", true},
		{"longest of those ending together", []string{"cd", "bcd"}, true, []int{8}, "abcd", true},
		{"empty stop ignored", []string{""}, false, []int{0, 1}, "Hello", false},
		{"duplicates", []string{"lo", "lo"}, false, []int{0, 1}, "Hel", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutput(words, compileStopStrings(tc.stops), tc.include)
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
	o := newOutput(pieces{"abc", "ST", "x", "S", "TO"}, compileStopStrings([]string{"STOP"}), false)
	for _, step := range []struct {
		id   int
		want string
	}{
		{0, "abc"},
		{1, ""}, // "ST" may start "STOP": held back
		{2, "STx"},
		{3, ""},
		{4, ""}, // "STO" still may
	} {
		text, stopped := o.add(step.id)
		require.False(t, stopped)
		require.Equal(t, step.want, text, "after id %d", step.id)
	}
	require.Equal(t, "STO", o.flush(), "the end of generation releases what was held")
}

// TestStopStringLimits: more or longer stop strings than the limits, or one that is not
// UTF-8, is an error naming the count or string, its size and the limit; the limits
// themselves are taken.
func TestStopStringLimits(t *testing.T) {
	long := strings.Repeat("x", MaxStopStringBytes)
	for _, tc := range []struct {
		name  string
		stops []string
		err   string
	}{
		{"at the limits", slices.Repeat([]string{long}, MaxStopStrings), ""},
		{"too many", slices.Repeat([]string{"x"}, MaxStopStrings+1), "stop holds 257 strings; at most 256 are allowed"},
		{"too long", []string{"a", long + "x"}, "stop string 1 is 257 bytes long; at most 256 bytes are allowed"},
		{"not UTF-8", []string{"\xff"}, "stop string 0 is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newStopStrings(tc.stops)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// firstStop is the plain reference of stopStrings (its doc comment's loop): the end of the
// stop string that text completes first, the longest of those completed together, and its
// length; -1 and 0 if text holds none.
func firstStop(text string, stops []string) (end, n int) {
	end = -1
	for _, stop := range stops {
		if stop == "" {
			continue
		}
		if i := strings.Index(text, stop); i >= 0 {
			if e := i + len(stop); end < 0 || e < end || e == end && len(stop) > n {
				end, n = e, len(stop)
			}
		}
	}
	return end, n
}

// heldTail is the plain reference of what an output holds back: the length of the longest
// suffix of text that is a proper prefix of a stop string.
func heldTail(text string, stops []string) int {
	n := 0
	for _, stop := range stops {
		for k := min(len(stop)-1, len(text)); k > n; k-- {
			if strings.HasSuffix(text, stop[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// checkOutput feeds text cut into chunks to an output over stops and requires, after
// every chunk, what the plain references give: the stop (at the chunk that completes the
// first one), or else everything emitted but the held tail; and the automaton's work: at
// most two steps a byte scanned, every byte fed up to the stop scanned.
func checkOutput(t *testing.T, text string, chunks []string, stops []string, include bool) {
	o := newOutput(pieces(chunks), compileStopStrings(stops), include)
	var fed, emitted strings.Builder
	for id, chunk := range chunks {
		fed.WriteString(chunk)
		out, stopped := o.add(id)
		emitted.WriteString(out)
		end, n := firstStop(fed.String(), stops)
		require.Equal(t, end >= 0, stopped, "text %q chunks %q stops %q: stopped after chunk %d", text, chunks, stops, id)
		if stopped {
			want := fed.String()[:end-n]
			if include {
				want = fed.String()[:end]
			}
			require.Equal(t, want, emitted.String(), "text %q chunks %q stops %q include %v", text, chunks, stops, include)
			require.Equal(t, want, o.text())
			require.Equal(t, "", o.flush())
			require.EqualValues(t, end, o.scanned, "bytes scanned: those up to the stop")
			require.LessOrEqual(t, o.steps, 2*o.scanned)
			return
		}
		s := fed.String()
		require.Equal(t, s[:len(s)-heldTail(s, stops)], emitted.String(), "text %q chunks %q stops %q: emitted after chunk %d", text, chunks, stops, id)
	}
	emitted.WriteString(o.flush())
	require.Equal(t, text, emitted.String())
	require.Equal(t, text, o.text())
	if compileStopStrings(stops) != nil {
		require.EqualValues(t, len(text), o.scanned)
	}
	require.LessOrEqual(t, o.steps, 2*o.scanned)
}

// cut splits text into chunks of the lengths sizes gives in turn (each size % 6, so empty
// chunks too), the rest in one.
func cut(text string, sizes []byte) []string {
	var chunks []string
	for _, b := range sizes {
		n := min(int(b%6), len(text))
		chunks, text = append(chunks, text[:n]), text[n:]
	}
	return append(chunks, text)
}

// TestOutputMatchesReference: over random texts and stop strings of a small alphabet
// (so that stop strings overlap, share prefixes and recur), cut into random chunks, the
// output stops, emits and holds back what the plain references give.
func TestOutputMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	word := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 4000 {
		alphabet := []string{"ab", "abc", "aab"}[r.IntN(3)]
		stops := make([]string, r.IntN(5))
		for i := range stops {
			stops[i] = word(alphabet, r.IntN(7))
		}
		text := word(alphabet, r.IntN(40))
		sizes := []byte(word("\x00\x01\x02\x03\x04\x05", r.IntN(12)))
		checkOutput(t, text, cut(text, sizes), stops, r.IntN(2) == 0)
	}
}

// FuzzOutputStopStrings is TestOutputMatchesReference's check over any bytes: stops are
// the lines of stopLines.
func FuzzOutputStopStrings(f *testing.F) {
	f.Add("Hello STOP more", "STOP", []byte{3, 2, 4}, false)
	f.Add("aaaaaaaaab", "aaab\naab\nb", []byte{1, 1, 1, 5}, true)
	f.Add("abcd", "abcd\nbc", []byte{}, false)
	f.Fuzz(func(t *testing.T, text, stopLines string, sizes []byte, include bool) {
		stops := strings.Split(stopLines, "\n")
		if len(stops) > MaxStopStrings {
			return
		}
		for _, s := range stops {
			if len(s) > MaxStopStringBytes {
				return
			}
		}
		checkOutput(t, text, cut(text, sizes), stops, include)
	})
}

// TestOutputStopWorkIsLinear: the strings that made the old search cost stops × length²
// a token (the most and longest allowed, each a run of "a" that the text keeps almost
// completing) take at most two automaton steps a byte of text.
func TestOutputStopWorkIsLinear(t *testing.T) {
	stops := make([]string, MaxStopStrings)
	for i := range stops {
		stops[i] = strings.Repeat("a", MaxStopStringBytes-1-i%64) + string(rune('b'+i/64))
	}
	s, err := newStopStrings(stops)
	require.NoError(t, err)
	text := strings.Repeat(strings.Repeat("a", 300)+"z", 20)
	chunks := cut(text, []byte(strings.Repeat("\x03\x05\x01", 2000)))
	o := newOutput(pieces(chunks), s, false)
	var emitted strings.Builder
	for id := range chunks {
		out, stopped := o.add(id)
		require.False(t, stopped)
		emitted.WriteString(out)
	}
	emitted.WriteString(o.flush())
	require.Equal(t, text, emitted.String())
	require.EqualValues(t, len(text), o.scanned)
	require.GreaterOrEqual(t, o.steps, o.scanned, "every byte goes through the automaton")
	require.LessOrEqual(t, o.steps, 2*o.scanned, "at most two steps a byte")
}
