package engine

// spreadPrefill bounds what the budget leaves for prefill chunks beside the step's decode
// tokens (Config.PrefillSteps) so that a backlog of prefill tokens is taken in
// PrefillSteps steps: the pending tokens (those the running sequences still prefilling
// have left and those of the queued sequences there is room to admit) over PrefillSteps,
// a rate kept while that backlog lasts and raised by arrivals. (A share of what is left
// at every step let a burst's last prompts in one a step, over three times as many steps,
// and its sequences stayed out of step for the rest of the run.) The bound is never below
// the step's decode tokens nor a block, so that a lone prompt's last tokens are not spread
// thinner and thinner. A step without decode tokens is not bounded, and neither is a
// burst (isBurst) until it is taken. Called between the decode and the prefill passes,
// with the queue locked.
func (e *Engine) spreadPrefill(p *plan) {
	steps, decodes := e.cfg.PrefillSteps, len(p.chunks) // the decode pass's
	q := &e.sched
	if steps <= 1 || decodes == 0 {
		q.spread.rate, q.spread.left, q.spread.burst = 0, 0, false
		return
	}
	pending, prefilling := e.pendingPrefill(p)
	if q.spread.burst || e.isBurst(prefilling, decodes) {
		// Kept until the burst is taken: its last prompts, fewer than the sequences
		// decoding by then, would otherwise be paced and start decoding steps later.
		q.spread.rate, q.spread.left = 0, pending-p.budget
		q.spread.burst = q.spread.left > 0
		return
	}
	rate := (pending + steps - 1) / steps
	if q.spread.left > 0 { // the last step's backlog is not taken yet: keep its pace
		rate = max(rate, q.spread.rate)
	}
	p.budget = min(p.budget, max(rate, decodes, BlockSize))
	q.spread.rate, q.spread.left = rate, pending-p.budget
}

// isBurst reports whether the sequences prefilling (running, or queued with room to be
// admitted) are at least Config.PrefillBurstRatio times those decoding. Pacing such a
// backlog would delay the first tokens of the many to shorten the steps of the few, and
// leave the newcomers' first tokens spread over as many steps: they then end as spread,
// and a closed-loop client's next requests arrive as spread, wave after wave (TGI's
// router weighs the same two counts, waiting_served_ratio, before it pauses the running
// batch for a prefill).
func (e *Engine) isBurst(prefilling, decoding int) bool {
	r := e.cfg.PrefillBurstRatio
	return r > 0 && float64(prefilling) >= r*float64(decoding)
}

// pendingPrefill returns the prefill tokens pending and how many sequences they belong
// to: the running sequences still prefilling and the queued ones there is room to admit.
func (e *Engine) pendingPrefill(p *plan) (tokens, seqs int) {
	q := &e.sched
	for _, s := range p.running {
		if left := len(s.ids) - s.pos; left > 1 {
			tokens, seqs = tokens+left, seqs+1
		}
	}
	room := e.cfg.MaxRunning - len(p.running)
	for _, queue := range [][]*sequence{q.resuming, q.waiting} {
		n := min(room, len(queue))
		for _, s := range queue[:n] {
			tokens, seqs = tokens+len(s.ids)-s.pos, seqs+1
		}
		room -= n
	}
	return tokens, seqs
}
