package state

import "time"

// NewClock is the clock at now with expiration (a non-positive expiration
// takes Kafka's default).
func NewClock(now time.Time, expiration time.Duration) Clock {
	ms := expiration.Milliseconds()
	if ms <= 0 {
		ms = DefaultProducerIDExpirationMs
	}
	return Clock{NowMs: now.UnixMilli(), ExpirationMs: ms}
}
