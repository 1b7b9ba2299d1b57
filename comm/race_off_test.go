//go:build !race

package comm

const raceDetector = false
