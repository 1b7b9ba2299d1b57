package serving

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"
)

// benchWords are the words synthetic prompts are made of: common English words, about one
// token each in most vocabularies.
var benchWords = strings.Fields(`the of and to in is was for on that with as by at from it his an were are which
this be or has had first one their its new after who they two her she been other when time during there into
school more may years over only year most would world city some where between later three state such then
national used made known under many university united while part season team these american than film second
born south became states war through being including both before north high however people family early history
album area them series against until since district county name work life group music following number company`)

// syntheticPrompt returns n deterministic words drawn by rng.
func syntheticPrompt(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[rng.IntN(len(benchWords))])
	}
	return b.String()
}

// promptMaker draws the requests' prompts: promptLen synthetic words, or, with a shared
// prefix, the prefix's ids followed by promptLen ids drawn from the tokens of synthetic words.
type promptMaker struct {
	rng          *rand.Rand
	n            int
	prefix, pool []int32
}

// newPromptMaker returns o's prompts. With a shared prefix it tokenizes synthetic words on
// the server (POST /tokenize, BOS first where the vocabulary adds it), keeps the first
// o.SharedPrefixLen ids as the prefix, and sends one request of it, untimed, so that the
// server has it cached before the run.
func newPromptMaker(client *http.Client, o Options) (*promptMaker, error) {
	m := &promptMaker{rng: rand.New(rand.NewPCG(o.Seed, 0x7470736c696365)), n: o.PromptLen} // "tpslice"
	if o.SharedPrefixLen == 0 {
		return m, nil
	}
	words := rand.New(rand.NewPCG(o.Seed, 0x707265666978)) // "prefix"
	for n := o.SharedPrefixLen + 64; ; n *= 2 {
		ids, err := serverTokenize(client, o, syntheticPrompt(words, n))
		if err != nil {
			return nil, fmt.Errorf("--shared-prefix-len: %w", err)
		}
		if len(ids) > o.SharedPrefixLen {
			m.prefix, m.pool = ids[:o.SharedPrefixLen], ids[1:] // the pool without BOS
			break
		}
		if n > 64*o.SharedPrefixLen {
			return nil, fmt.Errorf("--shared-prefix-len: %d words tokenize to %d tokens only", n, len(ids))
		}
	}
	warm := o
	warm.MaxTokens = 1
	if r := streamCompletion(client, warm, m.next(), o.Seed, 0); r.err != nil {
		return nil, fmt.Errorf("--shared-prefix-len: the request caching the prefix: %w", r.err)
	}
	return m, nil
}

// next returns the next prompt: text, or ids.
func (m *promptMaker) next() any {
	if m.prefix == nil {
		return syntheticPrompt(m.rng, m.n)
	}
	ids := slices.Grow(slices.Clone(m.prefix), m.n)
	for range m.n {
		ids = append(ids, m.pool[m.rng.IntN(len(m.pool))])
	}
	return ids
}

// serverTokenize returns the ids of text from the server's POST /tokenize (vLLM's).
func serverTokenize(client *http.Client, o Options, text string) ([]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": o.Model, "prompt": text, "add_special_tokens": true})
	req, err := apiRequest(ctx, o, http.MethodPost, "/tokenize", body)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s/tokenize: %s", o.URL, httpError(resp.StatusCode, b))
	}
	var r struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("POST %s/tokenize: %w", o.URL, err)
	}
	return r.Tokens, nil
}
