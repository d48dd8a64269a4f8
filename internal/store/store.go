// Package store owns object storage for nereusctl: the Store interface that
// every backend (file://, s3://, mem://) implements, the sentinel errors,
// object-key validation, and the decorators (retry, rate limit, request
// counting, fault injection) layered over any backend.
//
// The store never interprets object contents. It must never let a key read
// from a document reach outside the store root, and it must never log or
// return credentials.
//
// Open parses a store URL into a backend (NewFile, NewS3, NewMem). The
// decorators stack over any Store; the command layer (cmd's
// openMeteredStore, then the root command) builds, from the backend out,
//
//	s := WithTimeout(backend, requestTimeout) // cuts each attempt
//	s = WithLog(s, log)                       // each attempt at debug level
//	s = WithRateLimit(s, rps)                 // file:// and mem:// only
//	s = WithRetry(s, DefaultRetryPolicy())    // the only retry layer
//	counter := NewCounter(s)                  // each call a command makes
//
// so the counter sees every call a command makes (a retried call counts
// once), the log and the timeout every attempt, and a test's fault injector
// (internal/testutil/faultstore) goes directly over the backend. WithRetry
// is the only retry layer (the S3 SDK's own retryer is off), so on s3://
// each attempt it makes is one HTTP request, which a Meter
// (OpenOptions.Meter) counts, with its bytes, and rate-limits at the HTTP
// client: there the budget is the Meter's, not WithRateLimit's. WithRetry
// logs its retries and give-ups on RetryPolicy.Log.
// CloseStore closes a backend through its decorators (each has Unwrap).
//
// Permanent failures (ErrAccessDenied, ErrCredentials, ErrNoSuchBucket,
// and any error marked Permanent) are never retried.
package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/keys"
)

// Sentinel errors. Backends wrap them with the operation and key; callers
// test with errors.Is.
var (
	// ErrNotFound: the object does not exist (S3 404 NoSuchKey / NotFound).
	ErrNotFound = errors.New("object not found")
	// ErrPreconditionFailed: a guarded Put or Delete lost its condition
	// (S3 412 PreconditionFailed): the object exists for IfAbsent, or its
	// ETag differs (or it is gone) for IfMatch. Never retried blindly.
	ErrPreconditionFailed = errkind.New(errkind.Conflict, "precondition failed")
	// ErrConflict: a concurrent conditional request on the same key is in
	// progress (S3 409 ConditionalRequestConflict). Safe to retry.
	ErrConflict = errors.New("conditional request conflict")
	// ErrInvalidKey: the key breaks the key rules (see ValidateKey).
	ErrInvalidKey = keys.ErrInvalid
	// ErrTooLarge: an object is larger than the caller's size cap.
	ErrTooLarge = errors.New("object too large")
)

// Guard is the condition of a Put or Delete.
type Guard struct {
	kind guardKind
	etag string
}

type guardKind uint8

const (
	guardNone guardKind = iota
	guardIfAbsent
	guardIfMatch
)

// None is an unconditional write.
func None() Guard { return Guard{} }

// IfAbsent succeeds only if the key does not exist (If-None-Match: *).
func IfAbsent() Guard { return Guard{kind: guardIfAbsent} }

// IfMatch succeeds only if the key exists with this ETag (If-Match).
func IfMatch(etag string) Guard { return Guard{kind: guardIfMatch, etag: etag} }

// IsNone reports an unconditional guard.
func (g Guard) IsNone() bool { return g.kind == guardNone }

// IsIfAbsent reports an If-None-Match: * guard.
func (g Guard) IsIfAbsent() bool { return g.kind == guardIfAbsent }

// MatchETag returns the ETag of an IfMatch guard and true, or "" and false.
func (g Guard) MatchETag() (string, bool) { return g.etag, g.kind == guardIfMatch }

func (g Guard) String() string {
	switch g.kind {
	case guardIfAbsent:
		return "if-absent"
	case guardIfMatch:
		return "if-match " + g.etag
	default:
		return "none"
	}
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key  string
	Size int64
	// ETag is the hex MD5 of the bytes for single-part objects, without
	// quotes, as S3 returns it and as file:// and mem:// compute it.
	ETag string
	// SHA256 is the hex full-object SHA-256 when the backend knows it
	// (empty otherwise). Identity decisions use the digests recorded in
	// Nereus documents, not this field.
	SHA256   string
	Modified time.Time
}

// Range selects bytes [Offset, Offset+Length) of an object. Length < 0 means
// to the end.
type Range struct {
	Offset int64
	Length int64
}

// Store is the object-store contract every backend implements.
//
// All methods are context-first and safe for concurrent use. Keys are
// validated by every backend with ValidateKey before any I/O.
//
// Idempotence: Get, Head and List are read-only. Put with None is
// idempotent. Put with IfAbsent is idempotent for the same bytes: a backend
// whose first attempt's response was lost and whose retry meets
// ErrPreconditionFailed compares the stored bytes with its own and reports
// success when they are equal (docs/design.md §2). Put with IfMatch is not
// idempotent by itself; callers re-read and decide. Delete with None of a
// missing key succeeds.
type Store interface {
	// Head returns the object's size and ETag, or ErrNotFound.
	Head(ctx context.Context, key string) (ObjectInfo, error)
	// Get returns the object's bytes (all of them when r is nil), or
	// ErrNotFound. A range past the end is truncated to the object.
	Get(ctx context.Context, key string, r *Range) ([]byte, error)
	// Put writes the whole object atomically under the guard and returns
	// its new info. A reader never sees a torn object.
	Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error)
	// Delete removes the object under the guard. IfMatch on a missing key
	// is ErrPreconditionFailed; None on a missing key is nil.
	Delete(ctx context.Context, key string, g Guard) error
	// List returns every object whose key starts with prefix, in lexical
	// (byte) order of keys, with its size and modification time. ETag and
	// SHA256 are filled where the backend has them for free (S3, mem://,
	// file://'s digest cache) and may be empty otherwise: use Head for an
	// ETag that must be there.
	List(ctx context.Context, prefix string) ([]ObjectInfo, error)
	// ListAfter is List restricted to keys that sort after startAfter
	// (S3's StartAfter): the tail of a listing costs its length only.
	ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error)
	// String names the store for messages (never with credentials).
	String() string
}

// IntoGetter is implemented by stores (and decorators) that can read a
// whole object into a caller's buffer, so that a long job reading many
// objects in turn reuses one buffer instead of allocating (and faulting
// in) fresh memory for each.
type IntoGetter interface {
	// GetInto is Get of the whole object into buf[:0], grown when too
	// small; the result may alias buf.
	GetInto(ctx context.Context, key string, buf []byte) ([]byte, error)
}

// GetInto reads the whole object key into buf when s can (IntoGetter),
// else with Get. The result may alias buf: the caller must be done with it
// before it reuses buf.
func GetInto(ctx context.Context, s Store, key string, buf []byte) ([]byte, error) {
	if g, ok := s.(IntoGetter); ok {
		return g.GetInto(ctx, key, buf)
	}
	return s.Get(ctx, key, nil)
}

// RangeLister is implemented by stores (and decorators) that can end a
// listing at a key, so that a listing of one range of a long prefix costs
// the pages of that range only, and several ranges can be listed at once.
type RangeLister interface {
	// ListRange lists the keys k with prefix and startAfter < k < before,
	// sorted (before == "": no end, as ListAfter).
	ListRange(ctx context.Context, prefix, startAfter, before string) ([]ObjectInfo, error)
}

// ListRange lists the keys with prefix in (startAfter, before) when s can
// (RangeLister), else with ListAfter and a filter.
func ListRange(ctx context.Context, s Store, prefix, startAfter, before string) ([]ObjectInfo, error) {
	if r, ok := s.(RangeLister); ok {
		return r.ListRange(ctx, prefix, startAfter, before)
	}
	all, err := s.ListAfter(ctx, prefix, startAfter)
	if err != nil || before == "" {
		return all, err
	}
	return keysBefore(all, before), nil
}

// keysBefore keeps the infos whose key sorts before before (infos sorted).
func keysBefore(infos []ObjectInfo, before string) []ObjectInfo {
	n := sort.Search(len(infos), func(i int) bool { return infos[i].Key >= before })
	return infos[:n]
}

// Closer is implemented by backends that hold resources.
type Closer interface {
	Close() error
}

// MaxKeyLen bounds object keys, as S3 does (1024 bytes; keys.MaxLen).
const MaxKeyLen = keys.MaxLen

// ValidateKey enforces the key rules (keys.Validate) every backend applies
// once, before any I/O. A key that passes can be joined to a file:// root
// safely.
func ValidateKey(key string) error { return keys.Validate(key) }

// ValidatePrefix applies the key rules to a List prefix (keys.ValidatePrefix).
func ValidatePrefix(prefix string) error { return keys.ValidatePrefix(prefix) }

// GetCapped reads a whole object but refuses one larger than max bytes
// (documents are read with a size cap; docs/design.md §14).
func GetCapped(ctx context.Context, s Store, key string, max int64) ([]byte, error) {
	// One ranged GET of max+1 bytes: a longer object shows itself without a
	// second request.
	b, err := s.Get(ctx, key, &Range{Offset: 0, Length: max + 1})
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("read %s: %w: %d bytes, limit %d", key, ErrTooLarge, len(b), max)
	}
	return b, nil
}
