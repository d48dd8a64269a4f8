// Package faultstore is the fault-injecting store of the tests (house
// style 16, 28): a decorator over any store.Store that fails the Nth call,
// loses the response after the write happened, flips a byte or truncates
// what a GET read. It lives in a test-helper package, never in the
// product: nothing nereusctl runs imports it.
package faultstore

import (
	"github.com/nereusctl/nereusctl/internal/store"

	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrInjected is the cause of every fault a faultstore.Store injects. It is
// retryable (WithRetry treats it as a transient failure).
var ErrInjected = errors.New("injected fault")

// FaultKind is what a fault Rule does.
type FaultKind uint8

const (
	// FailCall returns Rule.Err (ErrInjected if nil) without making the call.
	FailCall FaultKind = iota
	// LoseResponse makes the call, then drops its result and returns a
	// timeout-like error wrapping ErrInjected: the write happened, the
	// caller cannot know.
	LoseResponse
	// FlipByte (GET) inverts the byte at Rule.Offset (modulo the length) of
	// what was read.
	FlipByte
	// Truncate (GET) returns only the first Rule.Keep bytes read.
	Truncate
)

// Rule selects calls and says what fault to inject into them.
type Rule struct {
	// Verb is store.VerbGet, store.VerbPut, …; empty matches every verb.
	Verb string
	// Prefix limits the rule to keys (List prefixes) starting with it.
	Prefix string
	// Nth fires on the Nth matching call only (1-based); 0 fires on every
	// matching call.
	Nth  int
	Kind FaultKind
	// Err is FailCall's error.
	Err error
	// Offset is FlipByte's position; Keep is Truncate's length.
	Offset int64
	Keep   int64
}

// Store is the fault-injection decorator for tests (kopia's faulty blob
// storage, restic's checker tests): fail the Nth call, lose a response after
// the write happened, flip a byte or truncate on read.
type Store struct {
	s     store.Store
	mu    sync.Mutex
	rules []*ruleState
	fired int
}

type ruleState struct {
	Rule
	seen int
}

var _ store.Store = (*Store)(nil)

// New wraps s with no rules: calls pass through until rules are added.
func New(s store.Store) *Store { return &Store{s: s} }

func (f *Store) String() string { return f.s.String() }

// Unwrap returns the decorated store.
func (f *Store) Unwrap() store.Store { return f.s }

// Add installs a rule and returns f for chaining.
func (f *Store) Add(r Rule) *Store {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{Rule: r})
	return f
}

// FailNth fails the nth call of verb on keys with prefix with err.
func (f *Store) FailNth(verb string, n int, prefix string, err error) *Store {
	return f.Add(Rule{Verb: verb, Nth: n, Prefix: prefix, Kind: FailCall, Err: err})
}

// LoseResponseNth performs the nth call of verb on keys with prefix and
// then reports a timeout instead of its result.
func (f *Store) LoseResponseNth(verb string, n int, prefix string) *Store {
	return f.Add(Rule{Verb: verb, Nth: n, Prefix: prefix, Kind: LoseResponse})
}

// FlipByteNth flips the byte at offset in the nth GET of keys with prefix.
func (f *Store) FlipByteNth(n int, prefix string, offset int64) *Store {
	return f.Add(Rule{Verb: store.VerbGet, Nth: n, Prefix: prefix, Kind: FlipByte, Offset: offset})
}

// TruncateNth cuts the nth GET of keys with prefix to keep bytes.
func (f *Store) TruncateNth(n int, prefix string, keep int64) *Store {
	return f.Add(Rule{Verb: store.VerbGet, Nth: n, Prefix: prefix, Kind: Truncate, Keep: keep})
}

// Clear removes every rule.
func (f *Store) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Fired returns how many faults were injected so far.
func (f *Store) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// match returns the rules that fire for this call.
func (f *Store) match(verb, key string) []Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Rule
	for _, r := range f.rules {
		if (r.Verb != "" && r.Verb != verb) || !strings.HasPrefix(key, r.Prefix) {
			continue
		}
		r.seen++
		if r.Nth == 0 || r.seen == r.Nth {
			out = append(out, r.Rule)
			f.fired++
		}
	}
	return out
}

// lostResponse is the error of a LoseResponse fault; it looks like a
// network timeout (net.Error's Timeout).
type lostResponse struct{ op, key string }

func (e *lostResponse) Error() string {
	return fmt.Sprintf("%s %s: response lost: %v (timeout)", e.op, e.key, ErrInjected)
}
func (e *lostResponse) Unwrap() error   { return ErrInjected }
func (e *lostResponse) Timeout() bool   { return true }
func (e *lostResponse) Temporary() bool { return true }

// before applies FailCall rules; after applies LoseResponse rules.
func before(op, key string, rules []Rule) error {
	for _, r := range rules {
		if r.Kind == FailCall {
			if r.Err != nil {
				return fmt.Errorf("%s %s: %w", op, key, r.Err)
			}
			return fmt.Errorf("%s %s: %w", op, key, ErrInjected)
		}
	}
	return nil
}

func lose(op, key string, rules []Rule) error {
	for _, r := range rules {
		if r.Kind == LoseResponse {
			return &lostResponse{op: op, key: key}
		}
	}
	return nil
}

func (f *Store) Head(ctx context.Context, key string) (store.ObjectInfo, error) {
	rules := f.match(store.VerbHead, key)
	if err := before("head", key, rules); err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := f.s.Head(ctx, key)
	if lerr := lose("head", key, rules); lerr != nil {
		return store.ObjectInfo{}, lerr
	}
	return info, err
}

func (f *Store) Get(ctx context.Context, key string, rg *store.Range) ([]byte, error) {
	rules := f.match(store.VerbGet, key)
	if err := before("get", key, rules); err != nil {
		return nil, err
	}
	b, err := f.s.Get(ctx, key, rg)
	if lerr := lose("get", key, rules); lerr != nil {
		return nil, lerr
	}
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		switch r.Kind {
		case FlipByte:
			if len(b) > 0 {
				b[(r.Offset%int64(len(b))+int64(len(b)))%int64(len(b))] ^= 0xff
			}
		case Truncate:
			if r.Keep >= 0 && r.Keep < int64(len(b)) {
				b = b[:r.Keep]
			}
		}
	}
	return b, nil
}

func (f *Store) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	rules := f.match(store.VerbPut, key)
	if err := before("put", key, rules); err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := f.s.Put(ctx, key, data, g)
	if lerr := lose("put", key, rules); lerr != nil {
		return store.ObjectInfo{}, lerr
	}
	return info, err
}

func (f *Store) Delete(ctx context.Context, key string, g store.Guard) error {
	rules := f.match(store.VerbDelete, key)
	if err := before("delete", key, rules); err != nil {
		return err
	}
	err := f.s.Delete(ctx, key, g)
	if lerr := lose("delete", key, rules); lerr != nil {
		return lerr
	}
	return err
}

func (f *Store) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	rules := f.match(store.VerbList, prefix)
	if err := before("list", prefix, rules); err != nil {
		return nil, err
	}
	l, err := f.s.List(ctx, prefix)
	if lerr := lose("list", prefix, rules); lerr != nil {
		return nil, lerr
	}
	return l, err
}

func (f *Store) ListAfter(ctx context.Context, prefix, startAfter string) ([]store.ObjectInfo, error) {
	rules := f.match(store.VerbList, prefix)
	if err := before("list", prefix, rules); err != nil {
		return nil, err
	}
	l, err := f.s.ListAfter(ctx, prefix, startAfter)
	if lerr := lose("list", prefix, rules); lerr != nil {
		return nil, lerr
	}
	return l, err
}
