// Package fencetest checks that a destructive operation proves its lease
// before each of its writes (the Fence option of gc, compaction, repair
// and the trim sequence): a store that notes every write of the keys the
// fence guards and whether a fence call came before it, and a fence that
// can be told to refuse.
package fencetest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrRefused is the refusing fence's error.
var ErrRefused = errors.New("fencetest: lease not proven")

// Store wraps a store: each Put or Delete of a key Guarded selects must
// follow a Fence call made since the previous such write, and none may
// follow a refusal.
type Store struct {
	store.Store
	// Guarded selects the keys whose writes the fence guards.
	Guarded func(key string) bool
	// Continues, when set, says that a guarded write of key right after
	// one of prev is part of the same fenced step (one library call that
	// writes twice), needing no fence of its own.
	Continues func(prev, key string) bool
	// RefuseAt, when > 0, makes the RefuseAt-th Fence call (and every
	// later one) refuse.
	RefuseAt int

	mu       sync.Mutex
	fenced   bool
	refused  bool
	calls    int
	steps    []string
	unfenced []string
	late     []string
	writes   []string
}

// Fence is the fence to give the operation.
func (s *Store) Fence(ctx context.Context, step string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.steps = append(s.steps, step)
	if s.RefuseAt > 0 && s.calls >= s.RefuseAt {
		s.refused = true
		return fmt.Errorf("%s: %w", step, ErrRefused)
	}
	s.fenced = true
	return nil
}

func (s *Store) wrote(key string) {
	if s.Guarded == nil || !s.Guarded(key) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, key)
	if s.refused {
		s.late = append(s.late, key)
	}
	cont := false
	if n := len(s.writes); n >= 2 && s.Continues != nil {
		cont = s.Continues(s.writes[n-2], key)
	}
	if !s.fenced && !cont {
		s.unfenced = append(s.unfenced, key)
	}
	s.fenced = false
}

func (s *Store) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	s.wrote(key)
	return s.Store.Put(ctx, key, data, g)
}

func (s *Store) Delete(ctx context.Context, key string, g store.Guard) error {
	s.wrote(key)
	return s.Store.Delete(ctx, key, g)
}

// Report is what the store saw.
type Report struct {
	Steps    []string // the fence calls, in order
	Writes   []string // the guarded writes, in order
	Unfenced []string // guarded writes no fence call came before
	Late     []string // guarded writes after the fence refused
}

// Report returns what the store saw so far.
func (s *Store) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Report{Steps: append([]string(nil), s.steps...), Writes: append([]string(nil), s.writes...),
		Unfenced: append([]string(nil), s.unfenced...), Late: append([]string(nil), s.late...)}
}
