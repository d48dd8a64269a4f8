package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// slowStore answers each read after a delay, as S3 does, and records how
// many reads were in flight at once and which keys were read.
type slowStore struct {
	store.Store
	delay          time.Duration
	inFlight, peak atomic.Int64
	mu             sync.Mutex
	read           map[string]bool
	fail           string
}

func (s *slowStore) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	s.mu.Lock()
	s.read[key] = true
	s.mu.Unlock()
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if key == s.fail {
		return nil, errors.New("injected read failure")
	}
	return s.Store.Get(ctx, key, r)
}

func chainOf(t *testing.T, st store.Store, n int, size int) []layout.StreamObject {
	t.Helper()
	var chain []layout.StreamObject
	for i := range n {
		key := layout.ObjectKey("s-ra", int64(i), int64(i+1))
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(i)
		}
		if _, err := st.Put(context.Background(), key, data, store.None()); err != nil {
			t.Fatal(err)
		}
		chain = append(chain, layout.StreamObject{Key: key, Base: int64(i), End: int64(i + 1), Size: int64(size)})
	}
	return chain
}

// TestReadChainInOrderAndAhead: fn sees every object once, in chain
// order, with its own bytes, while up to ReadAheadObjects reads are in
// flight (never more), so a tail of n objects at 5 ms a read takes far
// less than n reads one after another.
func TestReadChainInOrderAndAhead(t *testing.T) {
	mem := store.NewMem("ra")
	st := &slowStore{Store: mem, delay: 5 * time.Millisecond, read: map[string]bool{}}
	chain := chainOf(t, mem, 40, 100)
	next := 0
	err := ReadChain(context.Background(), st, chain, func(o layout.StreamObject, data []byte) error {
		if o.Key != chain[next].Key {
			return fmt.Errorf("object %d is %s, want %s", next, o.Key, chain[next].Key)
		}
		if len(data) != 100 || data[0] != byte(next) || data[99] != byte(next) {
			return fmt.Errorf("object %d: wrong bytes (%d, first %d)", next, len(data), data[0])
		}
		next++
		return nil
	})
	if err != nil || next != len(chain) {
		t.Fatalf("read %d of %d objects: %v", next, len(chain), err)
	}
	if p := st.peak.Load(); p < 2 || p > ReadAheadObjects {
		t.Fatalf("%d reads in flight at most, want 2..%d", p, ReadAheadObjects)
	}
}

// TestReadChainBoundedByBytes: objects that fill ReadAheadBytes are read
// one at a time (a large tail does not hold eight large objects at once).
func TestReadChainBoundedByBytes(t *testing.T) {
	mem := store.NewMem("ra")
	st := &slowStore{Store: mem, delay: time.Millisecond, read: map[string]bool{}}
	chain := chainOf(t, mem, 5, ReadAheadBytes/2+1)
	if err := ReadChain(context.Background(), st, chain, func(layout.StreamObject, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if p := st.peak.Load(); p != 1 {
		t.Fatalf("%d reads of half-budget objects in flight, want 1", p)
	}
}

// TestReadChainStopsAtTheFirstError: a failed read ends the chain before
// fn sees that object or any after it, and so does fn's own error; no read
// is left running past the call.
func TestReadChainStopsAtTheFirstError(t *testing.T) {
	mem := store.NewMem("ra")
	chain := chainOf(t, mem, 30, 10)
	st := &slowStore{Store: mem, delay: time.Millisecond, read: map[string]bool{}, fail: chain[12].Key}
	seen := 0
	err := ReadChain(context.Background(), st, chain, func(layout.StreamObject, []byte) error { seen++; return nil })
	if err == nil || seen != 12 {
		t.Fatalf("failed read at object 12: fn saw %d objects, err %v", seen, err)
	}
	if st.inFlight.Load() != 0 {
		t.Fatalf("%d reads still in flight after ReadChain returned", st.inFlight.Load())
	}
	stop := errors.New("stop")
	seen = 0
	err = ReadChain(context.Background(), &slowStore{Store: mem, read: map[string]bool{}}, chain, func(layout.StreamObject, []byte) error {
		seen++
		if seen == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 3 {
		t.Fatalf("fn's error at object 3: saw %d, err %v", seen, err)
	}
}

// TestReadChainSizedToTheTailSharedByAFleet: a chain alone reads a tail
// of up to ReadAheadObjects objects all at once (one round of requests on
// S3), while chains read side by side (a command over many partitions)
// share ReadAheadTotal reads, each keeping ReadAheadMin in flight.
func TestReadChainSizedToTheTailSharedByAFleet(t *testing.T) {
	mem := store.NewMem("ra")
	chain := chainOf(t, mem, 48, 100)
	peak := func() int64 {
		st := &slowStore{Store: mem, delay: 20 * time.Millisecond, read: map[string]bool{}}
		if err := ReadChain(context.Background(), st, chain, func(layout.StreamObject, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		return st.peak.Load()
	}
	if p := peak(); p != int64(len(chain)) {
		t.Fatalf("a tail of %d objects alone: %d reads in flight at most, want all of them", len(chain), p)
	}
	// 63 other chains under way: the window is the minimum.
	activeChains.Add(63)
	p := peak()
	activeChains.Add(-63)
	if p != ReadAheadMin {
		t.Fatalf("beside 63 other chains: %d reads in flight at most, want %d", p, ReadAheadMin)
	}
}
