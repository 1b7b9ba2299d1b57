//go:build !race

package models

// llamaRaceDetector reports a build with the race detector, which makes the demo preset's
// forward passes tens of times slower; the Llama tests run less of it then.
const llamaRaceDetector = false
