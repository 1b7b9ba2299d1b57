package server

import (
	"io"
	"regexp"
)

// credentialHeader matches a header that carries a credential and its value, as raw
// bytes or as Go's %q quotes them (fasthttp's errors quote the bytes of a request they
// could not parse): the name starts a line (or follows a quoted \r or \n, or any
// character that cannot be in a name), the value runs to the end of the line, a quoted \r
// or \n, or the closing quote.
var credentialHeader = regexp.MustCompile(`(?i)(^|[^a-z0-9-]|\\[rn])((?:proxy-)?authorization|x-api-key|api-key|cookie)(\s*:\s*)(?:[^\r\n"\\]|\\[^rn])*`)

// bearerToken matches "Bearer <token>" wherever it stands.
var bearerToken = regexp.MustCompile(`(?i)\b(bearer\s+)(?:[^\s"\\]|\\[^rn])+`)

// redacted stands for a credential in a log line.
const redacted = "[redacted]"

// redactingWriter is the server's log output: it writes each line (log.Logger writes a
// line at a time, one at a time) with credentials replaced by [redacted], the values of
// the headers that carry them and any bearer token, so that a logged request, malformed
// or not, never leaks one.
type redactingWriter struct{ w io.Writer }

func (r redactingWriter) Write(p []byte) (int, error) {
	line := credentialHeader.ReplaceAll(p, []byte("${1}${2}${3}"+redacted))
	line = bearerToken.ReplaceAll(line, []byte("${1}"+redacted))
	if _, err := r.w.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}
