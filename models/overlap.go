package models

import (
	"github.com/tpslice/tpslice/device"
)

// overlapLayers runs the layers as two micro-batches, SGLang's two-batch overlap: while
// one micro-batch's fused all-reduce runs on the comm stream ms (on its own SM budget),
// the other's GEMMs and attention run on the compute stream cs. Events order them:
//
//	cs: attn A │ attn B │ ▸fA mlp A │ ▸fB mlp B │ ▸hA attn A (next layer) …
//	ms:  ▸eA AR A │ ▸eB AR B │ ▸gA AR A │ ▸gB AR B …
//
// Every kernel is row-independent and every fused variant sums in rank order, so the
// result is bitwise that of the schedule without overlap.
func (rk *llamaRank) overlapLayers(cs, ms *device.Stream, st Step) error {
	T := len(st.IDs)
	var mbs [2]microBatch
	var err error
	if mbs[0], err = rk.micro(st, 0, T/2); err != nil {
		return err
	}
	if mbs[1], err = rk.micro(st, T/2, T); err != nil {
		return err
	}
	ev := &rk.overlapEvents
	// ms starts after the embedding's all-reduce on cs.
	if err := cs.Record(ev.start); err != nil {
		return err
	}
	if err := ms.WaitEvent(ev.start); err != nil {
		return err
	}
	for l := range rk.layers {
		for i, mb := range mbs {
			// attention on cs, after this micro-batch's previous all-reduce
			if l > 0 {
				if err := cs.WaitEvent(ev.mlpReduced[i]); err != nil {
					return err
				}
			}
			if err := rk.attention(cs, l, mb); err != nil {
				return err
			}
			if err := handoff(cs, ms, ev.attnDone[i]); err != nil {
				return err
			}
			if err := rk.reduce(ms, mb, rk.layers[l].ffnNorm); err != nil {
				return err
			}
			if err := ms.Record(ev.attnReduced[i]); err != nil {
				return err
			}
		}
		for i, mb := range mbs {
			if err := cs.WaitEvent(ev.attnReduced[i]); err != nil {
				return err
			}
			if err := rk.mlp(cs, l, mb); err != nil {
				return err
			}
			if err := handoff(cs, ms, ev.mlpDone[i]); err != nil {
				return err
			}
			if err := rk.reduce(ms, mb, rk.nextNorm(l)); err != nil {
				return err
			}
			if err := ms.Record(ev.mlpReduced[i]); err != nil {
				return err
			}
		}
	}
	// cs (the LM head) continues after both micro-batches' last all-reduce.
	for i := range mbs {
		if err := cs.WaitEvent(ev.mlpReduced[i]); err != nil {
			return err
		}
	}
	return nil
}

// handoff makes work enqueued on to after this call wait for what from has enqueued.
func handoff(from, to *device.Stream, e *device.Event) error {
	if err := from.Record(e); err != nil {
		return err
	}
	return to.WaitEvent(e)
}

// overlapEvents are the events of the two-batch schedule, reused every step (a wait
// refers to the record enqueued just before it).
type overlapEvents struct {
	start                 *device.Event
	attnDone, attnReduced [2]*device.Event
	mlpDone, mlpReduced   [2]*device.Event
}

func newOverlapEvents() overlapEvents {
	e := overlapEvents{start: device.NewEvent()}
	for i := range 2 {
		e.attnDone[i], e.attnReduced[i] = device.NewEvent(), device.NewEvent()
		e.mlpDone[i], e.mlpReduced[i] = device.NewEvent(), device.NewEvent()
	}
	return e
}
