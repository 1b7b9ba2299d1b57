//go:build linux

package ipc

import (
	"fmt"
	"os"

	"github.com/tpslice/tpslice/device"
)

// KindHandle is the kind of a message that carries a device.IPCHandle: its description in
// the body, its memory file as the one descriptor. Protocols above use kinds from 16 up.
const KindHandle uint32 = 1

// SendHandle sends a shareable handle (device.Buffer.ExportShareable) to the peer. The
// handle's file stays the caller's to close.
func SendHandle(c *Conn, h device.IPCHandle) error {
	if h.File == nil {
		return fmt.Errorf("ipc: send handle of device %d: it has no file (an export within the process)", h.Owner)
	}
	body, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	return c.Send(Message{Kind: KindHandle, Body: body, Files: []*os.File{h.File}})
}

// RecvHandle receives a handle SendHandle sent. Its file is the caller's to close once the
// memory is mapped (device.Device.OpenPeer).
func RecvHandle(c *Conn) (device.IPCHandle, error) {
	m, err := c.Recv()
	if err != nil {
		return device.IPCHandle{}, err
	}
	var h device.IPCHandle
	switch {
	case m.Kind != KindHandle:
		err = fmt.Errorf("ipc: receive handle from pid %d: got a message of kind %d", c.peer.Pid, m.Kind)
	case len(m.Files) != 1:
		err = fmt.Errorf("ipc: receive handle from pid %d: %d file descriptors came with it, want 1", c.peer.Pid, len(m.Files))
	default:
		if err = h.UnmarshalBinary(m.Body); err != nil {
			err = fmt.Errorf("ipc: receive handle from pid %d: %w", c.peer.Pid, err)
		}
	}
	if err != nil {
		_ = m.Close()
		return device.IPCHandle{}, err
	}
	h.File = m.Files[0]
	return h, nil
}
