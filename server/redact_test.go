package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/internal/testutil"
)

// TestLogRedactsCredentials: a malformed request's bytes, which fasthttp's error quotes
// and the server logs, keep their credentials out of the log: the request is still
// logged (its other headers show), its Authorization, X-Api-Key and Cookie values do not.
func TestLogRedactsCredentials(t *testing.T) {
	var log testutil.SyncBuffer
	ts := start(t, Config{ErrorLog: &log}, nil)
	for _, tc := range []struct{ name, request, secret string }{
		{"bad content-length", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-secret-1\r\nContent-Length: zz\r\n\r\n", "sk-secret-1"},
		{"bad header line", "GET /health HTTP/1.1\r\nauthorization:Basic c2VjcmV0LTI=\r\nNo Colon Here\r\n\r\n", "c2VjcmV0LTI="},
		{"api-key header", "GET /health HTTP/1.1\r\nX-Api-Key: sk-secret-3\r\nNo Colon Here\r\n\r\n", "sk-secret-3"},
		{"cookie", "GET /health HTTP/1.1\r\nCookie: session=secret-4\r\nNo Colon Here\r\n\r\n", "secret-4"},
		{"bad method", "GARBAGE\x01 Authorization: Bearer sk-secret-5\r\n\r\n", "sk-secret-5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write([]byte(tc.request))
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			resp, err := io.ReadAll(c) // the server answers 400 and closes
			require.NoError(t, err)
			require.Contains(t, string(resp), "400 Bad Request")
			// The server logs the request (and fasthttp logs it again) before it closes the
			// connection.
			require.Equal(t, 2, strings.Count(log.String(), c.LocalAddr().String()), "the malformed request is logged: %s", log.String())
			require.NotContains(t, log.String(), tc.secret)
			require.Contains(t, log.String(), redacted)
		})
	}
}
