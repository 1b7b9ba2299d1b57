//go:build linux

package ipc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/tpslice/tpslice/internal/testutil"
)

// socketVar names the environment variable that tells a child which socket to dial.
const socketVar = "TPSLICE_TEST_SOCKET"

// TestMain lets the test binary play a child process (testutil.ChildCommand).
func TestMain(m *testing.M) {
	if role := testutil.ChildRole(); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(role string) error {
	switch role {
	case "exit3":
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Hour) // until the test kills it
	case "dial": // connects and expects to be turned away
		c, err := Dial(os.Getenv(socketVar))
		if err != nil {
			return err
		}
		defer c.Close()
		if m, err := c.Recv(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("want the listener to hang up, got message %d (%v)", m.Kind, err)
		}
		return nil
	}
	return fmt.Errorf("unknown role")
}
