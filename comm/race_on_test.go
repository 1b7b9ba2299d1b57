//go:build race

package comm

// raceDetector reports a build with the race detector, under which the collectives run
// tens of times slower; the largest messages are then left to the tests that need them.
const raceDetector = true
