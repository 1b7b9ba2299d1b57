package decode

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tpslice/tpslice/bench"
)

// progress reports progress on Options.Progress: a bar redrawn in place on a terminal; elsewhere
// (a log, a pipe) one line per finished TP × batch, since \r redraws would pile into one
// unreadable line there.
type progress struct {
	w          io.Writer
	tty        bool
	cells, did int
	mu         sync.Mutex
	label      string
	tokens     int
	drawn      time.Time
}

func newProgress(w io.Writer, cells int) *progress {
	return &progress{w: w, tty: bench.IsTerminal(w), cells: cells}
}

// Write writes log lines (the engine's load notes, the fault it injects) above the bar,
// keeping the bar below them.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	n, err := p.w.Write(b)
	p.draw(true)
	return n, err
}

func (p *progress) start(tp, batch int, phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = fmt.Sprintf("tp=%d %s", tp, phase)
	if batch > 0 {
		p.label = fmt.Sprintf("tp=%d batch=%d %s", tp, batch, phase)
	}
	p.tokens = 0
	p.draw(true)
}

// token counts a token; the bar is redrawn at most every 100 ms.
func (p *progress) token() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens++
	p.draw(false)
}

func (p *progress) draw(force bool) {
	if !p.tty || (!force && time.Since(p.drawn) < 100*time.Millisecond) {
		return
	}
	p.drawn = time.Now()
	const width = 24
	fill := width * p.did / max(p.cells, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s %d tokens", strings.Repeat("#", fill), strings.Repeat(".", width-fill), p.did, p.cells, p.label, p.tokens)
}

func (p *progress) finish(r Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.did++
	if !p.tty {
		fmt.Fprintf(p.w, "# bench: %d/%d tp=%d batch=%d: p50 %.3f ms, %.1f tok/s\n", p.did, p.cells, r.TP, r.Batch, r.P50Ms, r.TokensPerS)
	}
	p.draw(true)
}

// note prints a line, keeping the bar below it.
func (p *progress) note(s string) { fmt.Fprintf(p, "# bench: %s\n", s) }

// done clears the bar.
func (p *progress) done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
