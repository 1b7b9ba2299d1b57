//go:build linux

package ipc

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/tpslice/tpslice/device"
)

// KindHandles is the kind of a message that carries one rank's list of handles in an
// all-gather: the rank (a little-endian uint32) and each handle's description in the body,
// their memory files as the descriptors, in order.
const KindHandles uint32 = 2

// descBytes is the size of a handle's description (device.IPCHandle.MarshalBinary).
const descBytes = 13

// sendHandles sends rank's handles as one message; their files stay the caller's.
func sendHandles(c *Conn, rank int, hs []device.IPCHandle) error {
	body := binary.LittleEndian.AppendUint32(nil, uint32(rank))
	files := make([]*os.File, len(hs))
	for i, h := range hs {
		if h.File == nil {
			return fmt.Errorf("ipc: send rank %d's handle %d (device %d): it has no file (an export within the process)", rank, i, h.Owner)
		}
		d, err := h.MarshalBinary()
		if err != nil {
			return err
		}
		body, files[i] = append(body, d...), h.File
	}
	return c.Send(Message{Kind: KindHandles, Body: body, Files: files})
}

// recvHandles receives one rank's handles, which must be want's (-1: any rank's), and
// returns the rank and the handles, whose files are the caller's to close.
func recvHandles(c *Conn, want int) (int, []device.IPCHandle, error) {
	m, err := c.Recv()
	if err != nil {
		return 0, nil, err
	}
	rank, hs, err := parseHandles(m, want)
	if err != nil {
		_ = m.Close()
		return 0, nil, fmt.Errorf("ipc: receive handles from pid %d: %w", c.peer.Pid, err)
	}
	return rank, hs, nil
}

// parseHandles reads a KindHandles message; the handles own the message's files.
func parseHandles(m Message, want int) (int, []device.IPCHandle, error) {
	switch {
	case m.Kind != KindHandles:
		return 0, nil, fmt.Errorf("got a message of kind %d, want %d (handles)", m.Kind, KindHandles)
	case len(m.Body) != 4+descBytes*len(m.Files):
		return 0, nil, fmt.Errorf("%d body bytes for %d handles, want %d", len(m.Body), len(m.Files), 4+descBytes*len(m.Files))
	}
	rank := int(binary.LittleEndian.Uint32(m.Body))
	if want >= 0 && rank != want {
		return 0, nil, fmt.Errorf("the handles of rank %d came where rank %d's belong", rank, want)
	}
	hs := make([]device.IPCHandle, len(m.Files))
	for i := range hs {
		if err := hs[i].UnmarshalBinary(m.Body[4+descBytes*i : 4+descBytes*(i+1)]); err != nil {
			return 0, nil, fmt.Errorf("rank %d's handle %d: %w", rank, i, err)
		}
		hs[i].File = m.Files[i]
	}
	return rank, hs, nil
}

// closeAll closes the files of every handle in hs.
func closeAll(hs [][]device.IPCHandle) {
	for _, l := range hs {
		for _, h := range l {
			_ = h.Close()
		}
	}
}

// GatherHandles is a rank process's side of an all-gather of handles through the driver
// (RelayGather): it sends its own (their files stay the caller's) and returns every rank's,
// index = rank, whose files are the caller's to close.
func GatherHandles(c *Conn, rank, size int, mine []device.IPCHandle) ([][]device.IPCHandle, error) {
	if rank < 0 || rank >= size {
		return nil, fmt.Errorf("ipc: gather handles as rank %d of %d", rank, size)
	}
	if err := sendHandles(c, rank, mine); err != nil {
		return nil, err
	}
	all := make([][]device.IPCHandle, size)
	for p := range size {
		_, hs, err := recvHandles(c, p)
		if err != nil {
			closeAll(all)
			return nil, fmt.Errorf("ipc: rank %d gathering rank %d's handles: %w", rank, p, err)
		}
		all[p] = hs
	}
	return all, nil
}

// RelayGather is the driver's side of the all-gather: conns[r] is the connection to the
// process of rank r, or nil for a rank of the driver's own process, whose handles own[r]
// holds (own may be shorter when the driver holds no rank). It receives every rank process's handles,
// sends every rank process the whole set, one message a rank, and returns the set, whose
// received files are the caller's to close (own's stay where they were). An error names
// the rank whose message was bad or missing.
func RelayGather(conns []*Conn, own [][]device.IPCHandle) ([][]device.IPCHandle, error) {
	all := make([][]device.IPCHandle, len(conns))
	received := make([][]device.IPCHandle, len(conns))
	for r, c := range conns {
		if c == nil {
			if r >= len(own) {
				return nil, fmt.Errorf("ipc: relay gather: rank %d has neither a connection nor a list of handles of its own", r)
			}
			all[r] = own[r]
			continue
		}
		_, hs, err := recvHandles(c, r)
		if err != nil {
			closeAll(received)
			return nil, fmt.Errorf("ipc: relay gather: rank %d: %w", r, err)
		}
		all[r], received[r] = hs, hs
	}
	for q, c := range conns {
		if c == nil {
			continue
		}
		for p, hs := range all {
			if err := sendHandles(c, p, hs); err != nil {
				closeAll(received)
				return nil, fmt.Errorf("ipc: relay gather: sending rank %d's handles to rank %d: %w", p, q, err)
			}
		}
	}
	return all, nil
}
