package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadConversation: a messages file is an array, or an object with "messages" and
// optionally "tools"; anything else is an error saying what is wanted.
func TestReadConversation(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	msgs, tools, err := ReadConversation(file("a.json", "  [{\"role\": \"user\", \"content\": \"hi\"}]\n"))
	require.NoError(t, err)
	require.JSONEq(t, `[{"role": "user", "content": "hi"}]`, string(msgs))
	require.Nil(t, tools)

	msgs, tools, err = ReadConversation(file("o.json", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}], "max_tokens": 5}`))
	require.NoError(t, err)
	require.JSONEq(t, `[{"role": "user", "content": "hi"}]`, string(msgs))
	require.JSONEq(t, `[{"type": "function"}]`, string(tools))

	_, _, err = ReadConversation(file("bad.json", "[{"))
	require.EqualError(t, err, "not valid JSON")
	_, _, err = ReadConversation(file("p.json", `{"prompt": "hi"}`))
	require.ErrorContains(t, err, `an object with "messages"`)
	_, _, err = ReadConversation(filepath.Join(dir, "none.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
