// Package shmring carries the driver's steps to the rank processes and their answers back
// through memory the processes share, never through a socket per step: the shape of
// vLLM's shm_broadcast.MessageQueue. One Writer (the driver) broadcasts each message to
// every Reader (a rank); each reader answers the message through a reply slot of its own,
// and the writer gathers the answers.
//
// The ring lives in one block of shared words (a device.Buffer from AllocShareable, its
// handle sent to each reader); Config.Words says how many. Laid out in cache lines:
//
//	header | writer's bell | readers' bell | reader 0 … N-1: released, reply, taken
//	slot 0: [seq | length | payload …] … slot K-1 | reply 0: [length | payload …] … reply N-1
//
// A message of L bytes is split into chunks of up to SlotBytes, at least one (Send refuses
// one over Config.MaxMessage, at most 4 GiB − 1, naming both sizes); chunk g (counted over
// all messages since the ring began) goes to slot g mod K:
//
//	writer                                   reader r
//	wait: every released[r] ≥ g+1−K          wait: slot.seq = g+1
//	copy payload, length into the slot       copy payload out
//	atomic store slot.seq = g+1; ring        atomic store released[r] = g+1; ring
//
// The sequence word is stored after the payload and loaded before it (sync/atomic on the
// mapped word orders the plain copies around it), so a reader never sees a torn chunk, and
// the writer reuses a slot only once every reader released what it held. A reply is the
// same handshake on one slot per reader: the reader waits until the writer took its last
// reply (taken[r]), writes the new one and stores its message number in reply[r]; Gather
// waits for every reader's number, copies the replies and stores taken[r].
//
// Every wait is a device.SharedBell (a brief poll, then FUTEX_WAIT on the shared page), with
// a deadline and an abort function: a reader that died (the ipc.Children poller reports it)
// ends the writer's wait with an error naming the reader it waited for and the abort's own
// error (its pid and exit status). Whoever makes the abort function return an error calls
// Wake, so that sleepers see it.
package shmring
