package state

import (
	"math"
	"time"
)

// DefaultProducerIDExpirationMs is the default of Kafka's broker config
// producer.id.expiration.ms (one day).
const DefaultProducerIDExpirationMs int64 = 86400000

// Clock is the explicit clock producer expiration is decided with: the
// time in Unix milliseconds and producer.id.expiration.ms. The zero Clock
// (NowMs 0) applies no expiration: the state is what the log says, as
// before nereusctl knew of the rule.
type Clock struct {
	NowMs        int64 `json:"now_ms"`
	ExpirationMs int64 `json:"producer_id_expiration_ms"`
}

// Set reports whether the clock applies expiration.
func (c Clock) Set() bool { return c.NowMs != 0 }

// Time is the clock's time (the zero time when not set).
func (c Clock) Time() time.Time {
	if !c.Set() {
		return time.Time{}
	}
	return time.UnixMilli(c.NowMs).UTC()
}

// IsProducerExpired is ProducerStateManager.isProducerExpired (Apache
// Kafka, storage/.../log/ProducerStateManager.java): a producer with no
// ongoing transaction (currentTxnFirstOffset empty) whose lastTimestamp is
// at least producer.id.expiration.ms before the clock. An unset clock
// expires nothing.
func (c Clock) IsProducerExpired(pr *Producer) bool {
	return c.Set() && pr.TxnFirstOffset < 0 && c.NowMs-pr.LastTimestamp >= c.ExpirationMs
}

// RemoveExpiredProducers is ProducerStateManager.removeExpiredProducers:
// it drops every producer c.IsProducerExpired says is expired and returns
// their ids, ascending. A producer with an ongoing transaction is never
// dropped, so the ongoing transactions, the LSO and the aborted ranges are
// untouched.
func (p *Partition) RemoveExpiredProducers(c Clock) []int64 {
	gone, _ := p.ExpireProducers(c)
	return gone
}

// ExpireProducers is RemoveExpiredProducers that also returns the latest
// lastTimestamp among the producers it dropped (NoTimestamp-1 when none):
// the state after it is the same at every clock from that timestamp +
// expiration on, up to the next producer's expiry (Horizon).
func (p *Partition) ExpireProducers(c Clock) (gone []int64, latest int64) {
	latest = math.MinInt64
	if !c.Set() {
		return nil, latest
	}
	for _, pr := range p.SortedProducers() {
		if c.IsProducerExpired(pr) {
			delete(p.Producers, pr.ID)
			gone = append(gone, pr.ID)
			latest = max(latest, pr.LastTimestamp)
		}
	}
	return gone, latest
}

// Horizon is the canonical clock of a state expired at some clock with
// expiration ms, given the latest lastTimestamp it dropped: the earliest
// clock that drops exactly those producers (latest + expiration). A
// checkpoint records it instead of the wall clock it was made at, so two
// checkpoints of the same state are the same bytes; expiring the
// unexpired state at it drops exactly what the clock dropped.
func Horizon(latest, expirationMs int64) Clock {
	if latest == math.MinInt64 || expirationMs <= 0 {
		return Clock{}
	}
	return Clock{NowMs: max(latest+expirationMs, 1), ExpirationMs: expirationMs}
}
