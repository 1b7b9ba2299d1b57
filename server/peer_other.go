//go:build !linux

package server

import "net"

// peerClosed returns nil: off Linux a non-streaming request is not watched for a client
// that left, and its generation runs to its end (streams still find a client that left
// when a write fails).
func peerClosed(net.Conn) func() bool { return nil }
