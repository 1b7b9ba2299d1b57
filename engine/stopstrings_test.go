package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeavyStopStringsBesideAnother: a request with the most and longest stop strings
// allowed, each a stretch of its own output that one last character keeps from matching
// (so the old search compared every string at every length, every token), runs beside a
// request without any: the other request's tokens are those it gives alone, the heavy one
// gives its text whole, and the step loop spent at most two automaton steps on each byte
// of the heavy text, so the steps both share cost the other request no more than the
// text's length. The bound is counted, not timed.
func TestHeavyStopStringsBesideAnother(t *testing.T) {
	e, err := New(Config{Model: "stories260K", TP: 2})
	require.NoError(t, err)
	defer e.Close()
	ctx := context.Background()
	heavy := Request{Prompt: "Lily and Ben", MaxTokens: 400, IgnoreEOS: true}
	other := Request{Prompt: "Once upon a time", MaxTokens: 64}
	heavyAlone, err := e.Generate(ctx, heavy, func(Token) error { return nil })
	require.NoError(t, err)
	text := heavyAlone.Text
	otherAlone, err := e.Generate(ctx, other, func(Token) error { return nil })
	require.NoError(t, err)

	const near = MaxStopStringBytes - len("§") // a stretch of the text, then a character it lacks
	require.Greater(t, len(text), 2*near, "text %q", text)
	require.NotContains(t, text, "§")
	for i := range MaxStopStrings {
		at := i * 7 % (len(text) - near)
		heavy.Stop = append(heavy.Stop, text[at:at+near]+"§")
	}
	before := e.Stats()
	res, err := e.GenerateBatch(ctx, []Request{heavy, other}, nil)
	require.NoError(t, err)
	after := e.Stats()

	require.Equal(t, text, res[0].Text, "no stop string matched")
	require.Equal(t, FinishLength, res[0].FinishReason)
	require.Equal(t, otherAlone.OutputIDs, res[1].OutputIDs)
	bytes, steps := after.StopTextBytes-before.StopTextBytes, after.StopMatchSteps-before.StopMatchSteps
	require.EqualValues(t, len(text), bytes, "the heavy text went through the matcher, the other request has no stop strings")
	require.GreaterOrEqual(t, steps, bytes, "every byte takes a step")
	t.Logf("%d bytes of text, %d automaton steps", bytes, steps)
	require.LessOrEqual(t, steps, 2*bytes, "at most two steps a byte, whatever the stop strings")
}

// TestStopStringLimitsRefused: requests beyond the limits are refused before they run,
// alone or among others.
func TestStopStringLimitsRefused(t *testing.T) {
	e := tinyEngine(t, 1)
	ctx := context.Background()
	_, err := e.Generate(ctx, Request{Prompt: "Hello", Stop: make([]string, MaxStopStrings+1)}, func(Token) error { return nil })
	require.ErrorContains(t, err, "stop holds 257 strings; at most 256 are allowed")
	tooLong := Request{Prompt: "Hello", Stop: []string{string(make([]byte, MaxStopStringBytes+1))}}
	_, err = e.GenerateBatch(ctx, []Request{{Prompt: "Hello"}, tooLong}, nil)
	require.ErrorContains(t, err, "request 1: engine: stop string 0 is 257 bytes long; at most 256 bytes are allowed")
	require.Zero(t, e.Blocks().InUse())
}
