package comm

import (
	"fmt"
	"slices"

	"github.com/tpslice/tpslice/device"
)

// hostLayout is a communicator's ranks grouped by host, as the two-level all-reduce walks
// them: hosts in the order of the node's host ids, ranks of a host in rank order. A rank's
// local index is its place in its host; its rail is the ranks of the same local index on
// every host (each GPU's own NIC, one per rail, as NCCL's rail-aligned rings run).
type hostLayout struct {
	hosts [][]int // ranks of each host
	rails [][]int // rails[l]: rank l of every host, in host order
	host  []int   // per rank: its host's index in hosts
	local []int   // per rank: its place in its host
	err   error   // why the two-level all-reduce cannot run here; nil when it can
}

// newHostLayout groups the ranks on devices by host.
func newHostLayout(node *device.Node, devices []int) hostLayout {
	l := hostLayout{host: make([]int, len(devices)), local: make([]int, len(devices))}
	byHost := map[int][]int{}
	for r, id := range devices {
		byHost[node.HostOf(id)] = append(byHost[node.HostOf(id)], r)
	}
	ids := make([]int, 0, len(byHost))
	for id := range byHost {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for h, id := range ids {
		l.hosts = append(l.hosts, byHost[id])
		for i, r := range byHost[id] {
			l.host[r], l.local[r] = h, i
		}
	}
	perHost := len(l.hosts[0])
	for h, ranks := range l.hosts {
		if len(ranks) != perHost {
			l.err = fmt.Errorf("the ranks do not split evenly over the hosts (host %d has %d, host %d has %d)", ids[0], perHost, ids[h], len(ranks))
			return l
		}
	}
	if len(l.hosts) < 2 {
		l.err = fmt.Errorf("it needs ranks on two hosts or more; all %d are on one", len(devices))
		return l
	}
	l.rails = make([][]int, perHost)
	for i := range perHost {
		for _, ranks := range l.hosts {
			l.rails[i] = append(l.rails[i], ranks[i])
		}
	}
	return l
}

// Hosts returns how many hosts the communicator's ranks are on.
func (c *Communicator) Hosts() int { return len(c.layout.hosts) }

// tableHosts is the Hosts a table made for this communicator records: 0 on one host.
func (c *Communicator) tableHosts() int {
	if c.Hosts() > 1 {
		return c.Hosts()
	}
	return 0
}

// hostsTag extends an autotuning fingerprint on a node of several hosts.
func (c *Communicator) hostsTag() string {
	if c.Hosts() > 1 {
		return fmt.Sprintf("/hosts%d", c.Hosts())
	}
	return ""
}

// multiHostRule is the selection without a table of this node's hosts: the two-level
// all-reduce, which crosses hosts once per element and rank, or the ring where the ranks
// do not split evenly over the hosts (2 of its n edges cross hosts). The single-host rule's
// one-shot and two-shot would read every peer across the slow fabric, unpriced.
func multiHostRule(c *Communicator) Algo {
	if c.Available(TwoLevel) {
		return TwoLevel
	}
	return Ring
}
