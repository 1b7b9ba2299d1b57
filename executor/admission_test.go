//go:build linux

package executor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAdmission(t *testing.T) {
	a := newAdmission(2)
	a.rankOf[100], a.rankOf[101] = 0, 1
	require.NoError(t, a.admit(100, hello{rank: 0, world: 2}))
	for _, tc := range []struct {
		pid  int
		h    hello
		want string
	}{
		{999, hello{rank: 1, world: 2}, "pid 999, which says it is rank 1, is not a worker this driver started"},
		{101, hello{rank: 1, world: 4}, "pid 101 (rank 1) says the world has 4 workers, the driver started 2"},
		{101, hello{rank: 0, world: 2}, "pid 101, started as rank 1, says it is rank 0"},
		{100, hello{rank: 0, world: 2}, "pid 100 (rank 0) joined already as pid 100: a second connection is refused"},
	} {
		require.EqualError(t, a.admit(tc.pid, tc.h), tc.want)
	}
	require.NoError(t, a.admit(101, hello{rank: 1, world: 2}))
}

func TestParseWorkerArgs(t *testing.T) {
	w := WorkerConfig{Job: "ping", Rank: 2, World: 4, Socket: "/tmp/x/sock"}
	got, err := ParseWorkerArgs(w.args())
	require.NoError(t, err)
	require.Equal(t, w, got)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--job", "ping", "--rank", "0", "--world", "1"}, "worker: no --socket: a worker is started by a driver process (--executor mp), not by hand"},
		{[]string{"--job", "ping", "--rank", "1", "--world", "1", "--socket", "s"}, "worker: --rank 1 of --world 1: want 0 ≤ rank < world"},
		{[]string{"--rank", "0", "--world", "1", "--socket", "s"}, "worker: no --job"},
		{[]string{"--socket", "s", "--job", "ping", "--world", "1", "--rank", "0", "extra"}, `worker: unexpected argument "extra"`},
		{[]string{"-h"}, "worker: a worker has no help: a driver starts it (--executor mp)"},
		{[]string{"--bogus"}, "worker: flag provided but not defined: -bogus"},
	} {
		_, err := ParseWorkerArgs(tc.args)
		require.EqualError(t, err, tc.want, "%q", tc.args)
	}
}
