//go:build race

package engine

// raceOn: the race detector slows every goroutine several times, so wall-clock tolerances do not
// hold; tests that measure timing say so and skip those checks.
const raceOn = true
