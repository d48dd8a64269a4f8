package nkc1

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/state"
)

// TestClockSection: a checkpoint made at a clock records it in optional
// section 10, which round-trips; without it (an older writer) the clock is
// nil and the state the same; a clock payload that does not decode is
// corruption naming the section.
func TestClockSection(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	c := checkpointFor(rng, genState(rng, 30))
	c.Clock = &state.Clock{NowMs: 1_795_000_000_000, ExpirationMs: state.DefaultProducerIDExpirationMs}
	data := mustEncode(t, c)
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Clock == nil || *got.Clock != *c.Clock {
		t.Fatalf("clock %v, want %v", got.Clock, c.Clock)
	}
	r, _ := Open(data)
	info, ok := r.Info(SectionClock)
	if !ok || !info.Optional || info.Name != "clock" {
		t.Fatalf("section 10: %+v (present %v): want optional, named clock", info, ok)
	}
	if v, err := r.Describe(SectionClock); err != nil || v.(ClockView) != (ClockView{NowMs: 1_795_000_000_000, Now: "2026-11-18T11:06:40Z", ProducerIDExpirationMs: state.DefaultProducerIDExpirationMs}) {
		t.Fatalf("describe clock: %v %v", v, err)
	}
	secs := sectionsOf(t, data)
	if len(secs) != numRequired+1 || secs[numRequired].id != SectionClock {
		t.Fatalf("%d sections", len(secs))
	}
	old, err := Decode(build(secs[:numRequired]))
	if err != nil {
		t.Fatal(err)
	}
	if old.Clock != nil || state.Digest(old.State) != state.Digest(got.State) {
		t.Fatal("without section 10: want no clock, the same state")
	}
	c.Clock = nil
	if _, err := Decode(mustEncode(t, c)); err != nil {
		t.Fatal(err)
	}
	bad := append([]rawSection(nil), secs...)
	bad[numRequired].raw = []byte{1, 2, 3}
	bad[numRequired].stored = bad[numRequired].raw
	if _, err := Decode(build(bad)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "section clock") {
		t.Fatalf("bad clock payload: %v", err)
	}
	c.Clock = &state.Clock{NowMs: 5, ExpirationMs: 0}
	if _, _, err := Encode(c); err == nil {
		t.Fatal("encode accepted a zero producer.id.expiration.ms")
	}
}
