package comm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tpslice/tpslice/device"
)

// DeathWatch is a driver's watch over the rank processes of a communicator it holds no
// rank of: once failed is closed (a rank's process died), it marks the dead rank exited in
// its control buffer, so that the survivors' waits end at once instead of at the collective
// deadline, and Named adds the dead rank's last collective to the driver's error. Its
// Watcher shows every rank's last collective meanwhile (Flight).
type DeathWatch struct {
	*Watcher
	node   *device.Node
	failed <-chan struct{}
	done   chan struct{} // closed by stop: the watch ends
	watch  sync.WaitGroup
	dead   int // the rank that died, -1 while none did (read after watch.Wait)
}

// WatchDeaths maps every rank's control buffer from handles (Watch; their files stay the
// caller's) and watches failed, which the driver closes when a rank's process died;
// deadRank then names it (-1: none died, e.g. a hangup).
func WatchDeaths(handles [][]device.IPCHandle, failed <-chan struct{}, deadRank func() int) (*DeathWatch, error) {
	node, err := device.NewNode(device.NodeConfig{Devices: 2, SMs: 1}) // Watch opens on a device that owns no buffer
	if err != nil {
		return nil, err
	}
	w, err := Watch(node, device.SharedMemory{}, handles)
	if err != nil {
		return nil, errors.Join(err, node.Close())
	}
	d := &DeathWatch{Watcher: w, node: node, failed: failed, done: make(chan struct{}), dead: -1}
	d.watch.Add(1)
	go func() {
		defer d.watch.Done()
		select {
		case <-d.done:
		case <-failed:
		}
		select {
		case <-failed: // also when done came first: Named waits for the mark
			if d.dead = deadRank(); d.dead >= 0 {
				_ = w.MarkExited(d.dead)
			}
		default:
		}
	}()
	return d, nil
}

// Named returns err with the dead rank's last collective, as its control buffer records
// it, where a rank's process died; else err as it is.
func (d *DeathWatch) Named(err error) error {
	select {
	case <-d.failed:
	default:
		return err
	}
	d.stop()
	if d.dead < 0 {
		return err
	}
	if last := d.Failure(d.dead); last != nil {
		return fmt.Errorf("%w; %v", err, last)
	}
	return err
}

// stop ends the watch and waits for it.
func (d *DeathWatch) stop() {
	select {
	case <-d.done:
	default:
		close(d.done)
	}
	d.watch.Wait()
}

// Close ends the watch and unmaps the control buffers.
func (d *DeathWatch) Close() error {
	d.stop()
	return errors.Join(d.Watcher.Close(), d.node.Close())
}
