package bench

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a terminal, where progress may redraw its line; elsewhere
// (a log, a pipe) \r redraws would pile into one unreadable line.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
