package engine

// spreadPrefill bounds what the budget leaves for prefill chunks beside the step's decode
// tokens (Config.PrefillSteps) so that a backlog of prefill tokens is taken in
// PrefillSteps steps: the pending tokens (those the running sequences still prefilling
// have left and those of the queued sequences there is room to admit) over PrefillSteps,
// a rate kept while that backlog lasts and raised by arrivals. (A share of what is left
// at every step let a burst's last prompts in one a step, over three times as many steps,
// and its sequences stayed out of step for the rest of the run.) The bound is never below the step's decode tokens nor a block, so that
// a lone prompt's last tokens are not spread thinner and thinner; a step without decode
// tokens is not bounded. Called between the decode and the prefill passes, with the
// queue locked.
func (e *Engine) spreadPrefill(p *plan) {
	steps, decodes := e.cfg.PrefillSteps, len(p.chunks) // the decode pass's
	q := &e.sched
	if steps <= 1 || decodes == 0 {
		q.spread.rate, q.spread.left = 0, 0
		return
	}
	pending := 0
	for _, s := range p.running {
		if left := len(s.ids) - s.pos; left > 1 {
			pending += left
		}
	}
	room := e.cfg.MaxRunning - len(p.running)
	for _, queue := range [][]*sequence{q.resuming, q.waiting} {
		for _, s := range queue[:min(room, len(queue))] {
			pending += len(s.ids) - s.pos
		}
		room -= min(room, len(queue))
	}
	rate := (pending + steps - 1) / steps
	if q.spread.left > 0 { // the last step's backlog is not taken yet: keep its pace
		rate = max(rate, q.spread.rate)
	}
	p.budget = min(p.budget, max(rate, decodes, BlockSize))
	q.spread.rate, q.spread.left = rate, pending-p.budget
}
