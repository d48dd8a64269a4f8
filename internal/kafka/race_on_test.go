//go:build race

package kafka

// raceEnabled: the race detector's instrumentation allocates, so
// allocation counts are not asserted under it.
const raceEnabled = true
