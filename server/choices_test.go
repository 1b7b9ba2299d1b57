package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/engine"
)

// TestChoices: n choices (greedy ones all equal, seeded ones each with its own draws,
// seed + index), a batch of prompts × n indexed prompt·n + j, and echo, on both endpoints,
// streamed and not, each choice equal to the engine's generation of it, at TP 1 and 8.
func TestChoices(t *testing.T) {
	for _, tp := range []int{1, 8} {
		t.Run(fmt.Sprintf("tp=%d", tp), func(t *testing.T) {
			e, err := engine.New(engine.Config{Model: "tiny", TP: tp})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			testChoices(t, e)
		})
	}
}

func testChoices(t *testing.T, e *engine.Engine) {
	ts := start(t, Config{}, e)
	tok := e.Tokenizer()
	ids := func(text string) []int32 { return generate(t, e, engine.Request{Prompt: text, MaxTokens: 1}).PromptIDs }
	cases := []struct {
		name   string
		fields map[string]any
		chat   bool
		want   func(i int) (engine.Request, string) // choice i's request and the text before its output
		n      int
	}{
		{"greedy n", map[string]any{"n": 3, "prompt": prompt}, false,
			func(int) (engine.Request, string) { return engine.Request{Prompt: prompt}, "" }, 3},
		{"seeded n", map[string]any{"n": 3, "prompt": prompt, "temperature": 1, "seed": 5}, false,
			func(i int) (engine.Request, string) {
				return engine.Request{Prompt: prompt, Sampling: engine.Sampling{Temperature: 1, Seed: 5 + uint64(i)}}, ""
			}, 3},
		{"chat seeded n", map[string]any{"n": 2, "messages": chatMessages, "temperature": 0.9, "top_k": 20, "seed": 8}, true,
			func(i int) (engine.Request, string) {
				return engine.Request{Prompt: chatPrompt, Sampling: engine.Sampling{Temperature: 0.9, TopK: 20, Seed: 8 + uint64(i)}}, ""
			}, 2},
		{"prompts × n", map[string]any{"n": 2, "prompt": []string{"one", "and two"}, "temperature": 1, "seed": 1}, false,
			func(i int) (engine.Request, string) {
				return engine.Request{Prompt: []string{"one", "and two"}[i/2], Sampling: engine.Sampling{Temperature: 1, Seed: 1 + uint64(i%2)}}, ""
			}, 4},
		{"token-id prompts, echoed", map[string]any{"prompt": [][]int32{ids("one"), ids("and two")}, "echo": true}, false,
			func(i int) (engine.Request, string) {
				p := ids([]string{"one", "and two"}[i])
				text, err := tok.Decode(toInts(p))
				require.NoError(t, err)
				return engine.Request{PromptIDs: p}, text
			}, 2},
		{"echo", map[string]any{"prompt": prompt, "echo": true, "n": 2}, false,
			func(int) (engine.Request, string) { return engine.Request{Prompt: prompt}, prompt }, 2},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tc.name, stream), func(t *testing.T) {
				req := map[string]any{"max_tokens": 8, "temperature": 0, "stream": stream}
				for k, v := range tc.fields {
					req[k] = v
				}
				path := "/v1/completions"
				if tc.chat {
					path = "/v1/chat/completions"
				}
				got := answer(t, ts, path, req)
				require.Len(t, got, tc.n)
				for i := range tc.n {
					r, before := tc.want(i)
					r.MaxTokens = 8
					res := generate(t, e, r)
					require.Equal(t, before+res.Text, got[i].Text, "choice %d", i)
					require.Equal(t, res.FinishReason, got[i].Finish, "choice %d", i)
				}
			})
		}
	}
	seeded := answer(t, ts, "/v1/completions", map[string]any{"n": 3, "prompt": prompt, "temperature": 1, "seed": 5, "max_tokens": 8})
	require.NotEqual(t, seeded[0].Text, seeded[1].Text, "each choice draws its own tokens")

	// Usage counts each prompt once and every choice's tokens.
	resp, body := ts.post(t, "/v1/completions", map[string]any{"prompt": []string{"one", "and two"}, "n": 3, "max_tokens": 4, "ignore_eos": true})
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	prompts := len(ids("one")) + len(ids("and two"))
	require.Equal(t, map[string]any{"prompt_tokens": float64(prompts), "completion_tokens": 24.0, "total_tokens": float64(prompts + 24)},
		decode(t, string(body))["usage"])
	require.Zero(t, e.Blocks().InUse())
}

// batchEngine records the size of every batch of choices the server submits.
type batchEngine struct {
	*engine.Engine
	sizes chan int
}

func (b batchEngine) GenerateEach(ctx context.Context, reqs []engine.Request, emit func(int, engine.Token) error, done func(int, engine.Result, error)) error {
	b.sizes <- len(reqs)
	return b.Engine.GenerateEach(ctx, reqs, emit, done)
}

// TestChoicesSubmittedTogether: a request's n × prompts choices reach the engine as one
// batch (the scheduler admits them at one step boundary).
func TestChoicesSubmittedTogether(t *testing.T) {
	e := batchEngine{newEngine(t), make(chan int, 4)}
	ts := start(t, Config{}, e)
	answer(t, ts, "/v1/completions", map[string]any{"prompt": []string{"a", "b"}, "n": 3, "max_tokens": 2, "stream": true})
	require.Equal(t, 6, <-e.sizes)
	answer(t, ts, "/v1/chat/completions", map[string]any{"messages": chatMessages, "n": 2, "max_tokens": 2})
	require.Equal(t, 2, <-e.sizes)
}
