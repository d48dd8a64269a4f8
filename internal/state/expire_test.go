package state

import (
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// applyBatch appends one data batch of producer pid (seq from 0, one
// record) at the log's next offset with timestamp ts.
func applyBatch(t *testing.T, p *Partition, pid int64, ts int64, txn bool) {
	t.Helper()
	s := kafka.NewBatchSpec(p.NextOffset, []kafka.Record{{Offset: p.NextOffset, Timestamp: ts, Key: []byte("k"), Value: []byte("v")}})
	s.ProducerID, s.ProducerEpoch, s.BaseSequence, s.Transactional = pid, 0, int32(p.NextOffset), txn
	b, err := kafka.EncodeBatch(s)
	if err != nil {
		t.Fatal(err)
	}
	h, err := kafka.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(h, int64(len(b)), Marker{}, Position{}); err != nil {
		t.Fatal(err)
	}
}

// applyMarker appends a commit marker of pid with timestamp ts.
func applyMarker(t *testing.T, p *Partition, pid int64, ts int64) {
	t.Helper()
	b, err := kafka.MarkerBatch(p.NextOffset, 0, pid, 0, true, 3, ts)
	if err != nil {
		t.Fatal(err)
	}
	h, err := kafka.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(h, int64(len(b)), Marker{Present: true, Type: kafka.ControlCommit, CoordinatorEpoch: 3, Timestamp: ts}, Position{}); err != nil {
		t.Fatal(err)
	}
}

var day = DefaultProducerIDExpirationMs

// expiryState: producer 1 idempotent and idle two days; producer 2 in an
// open transaction that began two days ago; producer 3 idempotent, an
// hour old; producer 4 transactional, committed two days ago.
func expiryState(t *testing.T, now int64) *Partition {
	p := New(0)
	applyBatch(t, p, 1, now-2*day, false)
	applyBatch(t, p, 2, now-2*day, true)
	applyBatch(t, p, 4, now-2*day-10, true)
	applyMarker(t, p, 4, now-2*day)
	applyBatch(t, p, 3, now-3600_000, false)
	return p
}

func TestRemoveExpiredProducers(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	p := expiryState(t, now.UnixMilli())
	lsoBefore, abortedBefore := p.LSO(), len(p.Aborted)
	gone := p.RemoveExpiredProducers(NewClock(now, 0))
	if len(gone) != 2 || gone[0] != 1 || gone[1] != 4 {
		t.Fatalf("expired %v, want [1 4] (idle, and idle after its commit)", gone)
	}
	if p.Producers[2] == nil {
		t.Fatal("producer 2 has an open transaction: kept whatever its age")
	}
	if p.Producers[3] == nil {
		t.Fatal("producer 3 is an hour old: kept")
	}
	if len(p.Producers) != 2 || len(p.Ongoing) != 1 || p.LSO() != lsoBefore || len(p.Aborted) != abortedBefore {
		t.Fatalf("producers %d, ongoing %d, LSO %d (was %d): expiration must touch only idle producers", len(p.Producers), len(p.Ongoing), p.LSO(), lsoBefore)
	}
	// The boundary is Kafka's >=: exactly expiration old is expired.
	q := New(0)
	applyBatch(t, q, 7, now.UnixMilli()-day, false)
	applyBatch(t, q, 8, now.UnixMilli()-day+1, false)
	if gone := q.RemoveExpiredProducers(NewClock(now, 0)); len(gone) != 1 || gone[0] != 7 {
		t.Fatalf("expired %v, want [7]: now - lastTimestamp >= producer.id.expiration.ms", gone)
	}
	// The zero clock expires nothing.
	r := expiryState(t, now.UnixMilli())
	if gone := r.RemoveExpiredProducers(Clock{}); gone != nil || len(r.Producers) != 4 {
		t.Fatalf("zero clock expired %v", gone)
	}
}

func TestExpiryDigestDeterministicPerClock(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	digestAt := func(at time.Time) string {
		p := expiryState(t, now.UnixMilli())
		p.RemoveExpiredProducers(NewClock(at, 0))
		return Digest(p)
	}
	if a, b := digestAt(now), digestAt(now); a != b {
		t.Fatalf("same clock, digests %s and %s", a, b)
	}
	// Producer 3 (an hour old at now) expires a day later: a different
	// state; a minute later nothing changes.
	if digestAt(now) == digestAt(now.Add(24*time.Hour)) {
		t.Fatal("a clock past producer 3's expiry gave the same digest")
	}
	if digestAt(now) != digestAt(now.Add(time.Minute)) {
		t.Fatal("a clock that expires nothing more changed the digest")
	}
	// A shorter producer.id.expiration.ms expires producer 3 at now.
	p := expiryState(t, now.UnixMilli())
	if gone := p.RemoveExpiredProducers(NewClock(now, 30*time.Minute)); len(gone) != 3 {
		t.Fatalf("expiration 30m expired %v, want [1 3 4]", gone)
	}
}
