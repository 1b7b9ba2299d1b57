//go:build linux

package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// SendJSON sends v, as JSON, in a message of kind: the control messages of a job's
// protocol (a setup, a worker's answer), none on a timed path.
func SendJSON(c *Conn, kind uint32, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.Send(Message{Kind: kind, Body: body})
}

// RecvJSON receives a message of kind into v. A message of kind failed carries the peer's
// error as text, which it returns; any other kind is an error naming both kinds.
func RecvJSON(c *Conn, kind, failed uint32, v any) error {
	m, err := c.Recv()
	if err != nil {
		return err
	}
	_ = m.Close() // no files travel with JSON
	switch m.Kind {
	case kind:
		return json.Unmarshal(m.Body, v)
	case failed:
		return errors.New(string(m.Body))
	}
	return fmt.Errorf("got a message of kind %d, want %d", m.Kind, kind)
}
