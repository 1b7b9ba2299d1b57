package tp

import "github.com/tpslice/tpslice/device"

// Node returns the device node the group's ranks run on (for node-wide hooks such as
// device.Node.SetTracer).
func (g *Group) Node() *device.Node { return g.node }
