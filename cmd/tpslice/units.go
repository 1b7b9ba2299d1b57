package main

import "time"

// ms is a duration in milliseconds, as the reports print them.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
