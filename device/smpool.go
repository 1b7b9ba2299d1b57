package device

import "sync/atomic"

// smPool holds a device's idle SMs as a count. A block takes one with a compare-and-swap
// and gives it back with an add: a channel of tokens did the same under the runtime's
// channel lock, a sixth of a small kernel's CPU with one SM. A block that finds none
// sleeps on the pool's doorbell until one is given back (no spin: a running block holds
// its SM for the kernel's whole share, microseconds at the least).
type smPool struct {
	free atomic.Int32
	bell doorbell
}

func (p *smPool) init(sms int) {
	p.free.Store(int32(sms))
	p.bell.init()
}

// tryAcquire takes an idle SM if there is one.
func (p *smPool) tryAcquire() bool {
	for {
		n := p.free.Load()
		if n == 0 {
			return false
		}
		if p.free.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// acquire takes an idle SM, waiting for one if none is.
func (p *smPool) acquire() {
	if !p.tryAcquire() {
		p.bell.sleep(p.tryAcquire)
	}
}

// release gives an SM back and wakes a block waiting for one. A sleeper counts itself
// before its last tryAcquire (doorbell), so the add here and that count cannot both miss.
func (p *smPool) release() {
	p.free.Add(1)
	p.bell.ring()
}
