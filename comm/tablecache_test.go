package comm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadOrTunePolicy: the one cache policy, with a tuner that counts its calls. A current
// cache is returned untouched; a missing or foreign one is tuned and overwritten; a damaged
// one is tuned, kept as path.damaged and reported; one that cannot be kept aside is not
// overwritten; an unreadable one is tuned and left alone; a failed tuning returns no table.
func TestLoadOrTunePolicy(t *testing.T) {
	own := &Table{Source: "tuned:here", Rows: []TableRow{{World: 2, Bucket: 6, Choice: Choice{Algo: OneShot}}}}
	foreign := &Table{Source: "tuned:elsewhere", Rows: own.Rows}
	current := func(t *Table) bool { return t.Source == own.Source }
	var tunes int
	tune := func() (*Table, error) { tunes++; return own, nil }
	run := func(path string) (*Table, bool, error) { return LoadOrTune(path, current, tune) }

	t.Run("good", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.json")
		require.NoError(t, SaveTable(path, own))
		tunes = 0
		got, fresh, err := run(path)
		require.NoError(t, err)
		require.False(t, fresh)
		require.Equal(t, own, got)
		require.Zero(t, tunes)
	})
	t.Run("missing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.json")
		tunes = 0
		got, fresh, err := run(path)
		require.NoError(t, err)
		require.True(t, fresh)
		require.Equal(t, own, got)
		require.Equal(t, 1, tunes)
		cached, err := LoadTable[Choice](path)
		require.NoError(t, err)
		require.Equal(t, own, cached)
	})
	t.Run("foreign", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.json")
		require.NoError(t, SaveTable(path, foreign))
		tunes = 0
		_, fresh, err := run(path)
		require.NoError(t, err)
		require.True(t, fresh)
		require.Equal(t, 1, tunes)
		cached, err := LoadTable[Choice](path)
		require.NoError(t, err)
		require.Equal(t, own.Source, cached.Source, "a foreign cache is overwritten")
		_, err = os.Stat(path + ".damaged")
		require.ErrorIs(t, err, os.ErrNotExist, "a foreign cache is not kept")
	})
	t.Run("damaged", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.json")
		require.NoError(t, os.WriteFile(path, []byte("{oops"), 0o644))
		tunes = 0
		got, fresh, err := run(path)
		require.ErrorContains(t, err, path+": bad JSON")
		require.ErrorContains(t, err, "kept as "+path+".damaged and tuned again")
		require.True(t, fresh)
		require.Equal(t, own, got)
		kept, err := os.ReadFile(path + ".damaged")
		require.NoError(t, err)
		require.Equal(t, "{oops", string(kept))
	})
	t.Run("damaged and cannot be kept aside", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "t.json")
		require.NoError(t, os.WriteFile(path, []byte("{oops"), 0o644))
		// A directory that is not empty cannot be renamed over, even by root.
		require.NoError(t, os.MkdirAll(filepath.Join(path+".damaged", "x"), 0o755))
		tunes = 0
		got, _, err := run(path)
		require.Nil(t, got)
		require.ErrorContains(t, err, "could not be kept aside")
		require.Zero(t, tunes)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, "{oops", string(data), "the file is left as it was")
	})
	t.Run("tuning fails", func(t *testing.T) {
		boom := errors.New("boom")
		got, fresh, err := LoadOrTune(filepath.Join(t.TempDir(), "t.json"), current, func() (*Table, error) { return nil, boom })
		require.ErrorIs(t, err, boom)
		require.Nil(t, got)
		require.False(t, fresh)
	})
	t.Run("unreadable", func(t *testing.T) {
		path := t.TempDir() // a directory cannot be read as a file, even by root
		tunes = 0
		got, fresh, err := run(path)
		require.ErrorContains(t, err, "tuned again, not cached")
		require.Equal(t, own, got, "the tuned table is still returned")
		require.True(t, fresh)
		require.Equal(t, 1, tunes)
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.True(t, info.IsDir(), "an unreadable cache is left alone")
	})
	t.Run("cannot cache", func(t *testing.T) {
		empty := &Table{Source: own.Source} // SaveTable refuses a table without rows
		got, fresh, err := LoadOrTune(filepath.Join(t.TempDir(), "t.json"), current, func() (*Table, error) { return empty, nil })
		require.ErrorContains(t, err, "could not cache the table")
		require.Equal(t, empty, got, "the tuned table is still returned")
		require.True(t, fresh)
	})
}
