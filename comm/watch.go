package comm

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/tpslice/tpslice/device"
)

// Watcher is a driver's view of a communicator whose ranks all live in worker processes
// of its own, none in the driver: it maps every rank's control buffer from the handles the
// driver relayed (the all-gather of Join), so that when the driver learns that a rank's
// process died it marks it there (MarkExited), which ends every surviving rank's wait at
// once, and reads the dead rank's last collective (Failure) for its own error, as
// Communicator.MarkExited does for a driver that holds a rank.
type Watcher struct {
	mem   device.PeerMemory
	ctls  []*device.Buffer // by rank, mapped
	views []peerView       // by rank: the control words only
	bells []*device.SharedBell
}

// Watch maps the control buffer of every rank from handles, every rank's registered
// buffers' handles in the order Join all-gathers them (index = rank); their files stay the
// caller's. node needs two devices: a rank's buffer is opened on one that is not its owner.
func Watch(node *device.Node, mem device.PeerMemory, handles [][]device.IPCHandle) (_ *Watcher, err error) {
	w := &Watcher{mem: mem}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("comm: watch %d ranks: %w", len(handles), err), w.Close())
		}
	}()
	if len(node.Devices()) < 2 {
		return nil, fmt.Errorf("the node has %d devices, want 2", len(node.Devices()))
	}
	for p, hs := range handles {
		if len(hs) <= regCtl {
			return nil, fmt.Errorf("rank %d sent %d handles of registered buffers, want at least %d", p, len(hs), regCtl+1)
		}
		h := hs[regCtl]
		dev, _ := node.Device(0)
		if h.Owner == 0 {
			dev, _ = node.Device(1)
		}
		b, err := mem.Open(dev, h)
		if err != nil {
			return nil, fmt.Errorf("rank %d's control buffer: %w", p, err)
		}
		w.ctls = append(w.ctls, b)
		ctl := b.Uint64s()
		bell, err := device.NewSharedBell(fmt.Sprintf("rank %d", p), unsafe.Slice((*uint32)(unsafe.Pointer(&ctl[ctlBell])), device.SharedBellWords))
		if err != nil {
			return nil, err
		}
		w.views, w.bells = append(w.views, peerView{ctl: ctl}), append(w.bells, bell)
	}
	return w, nil
}

// MarkExited records in rank p's control buffer that its process ended and wakes every
// rank's waiters, which then fail naming p and its last collective.
func (w *Watcher) MarkExited(p int) error {
	if p < 0 || p >= len(w.views) {
		return fmt.Errorf("comm: mark exited: rank %d, but the watcher has %d ranks", p, len(w.views))
	}
	markExited(w.views[p].ctl)
	for _, b := range w.bells {
		b.Ring()
	}
	return nil
}

// Failure returns rank p's failure as its control buffer records it, with its last
// collective, or nil while it has none.
func (w *Watcher) Failure(p int) error {
	if p < 0 || p >= len(w.views) {
		return fmt.Errorf("comm: failure of rank %d, but the watcher has %d ranks", p, len(w.views))
	}
	return w.views[p].failure(p)
}

// Flight returns every rank's last collective as its control buffer records it, without
// its times, wait or error: the flight recorder as a driver that holds no rank sees it.
func (w *Watcher) Flight() Flight {
	f := Flight{Ranks: make([][]Record, len(w.views))}
	for p := range w.views {
		if rec, ok := w.views[p].lastRecord(); ok {
			f.Ranks[p] = []Record{rec}
		}
	}
	return f
}

// Close unmaps the control buffers.
func (w *Watcher) Close() error {
	var errs []error
	for _, b := range w.ctls {
		errs = append(errs, w.mem.Close(b))
	}
	w.ctls, w.views, w.bells = nil, nil, nil
	return errors.Join(errs...)
}
