// Package lease owns the store leases that exclude concurrent long jobs
// (docs/design.md §10): created IfAbsent, renewed IfMatch, taken over IfMatch once
// expired, released with a conditional delete. Two cron jobs never work on
// the same thing at once; a crashed holder's lease expires.
package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// HeldError says who holds a lease and until when.
type HeldError struct {
	Name   string
	Holder string
	Until  time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %s is held by %s until %s", e.Name, e.Holder, e.Until.UTC().Format(time.RFC3339))
}

// ErrLost is returned by Renew when another holder took the lease.
var ErrLost = errors.New("lease lost")

// Lease is a held lease.
type Lease struct {
	st   store.Store
	doc  layout.Lease
	etag string
	ttl  time.Duration
	now  func() time.Time
	key  string
}

// Acquire takes the lease name for holder for ttl, or returns *HeldError.
func Acquire(ctx context.Context, st store.Store, name, holder string, ttl time.Duration, now func() time.Time) (*Lease, error) {
	if now == nil {
		now = time.Now
	}
	key := layout.LeaseKey(name)
	t := now()
	doc := layout.Lease{Name: name, Holder: holder, AcquiredMs: t.UnixMilli(), ExpiresMs: t.Add(ttl).UnixMilli()}
	l := &Lease{st: st, doc: doc, ttl: ttl, now: now, key: key}
	info, err := layout.Create(ctx, st, key, &doc)
	if err == nil {
		l.etag = info.ETag
		return l, nil
	}
	if !errors.Is(err, store.ErrPreconditionFailed) {
		return nil, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	var cur layout.Lease
	etag, err := layout.Load(ctx, st, key, &cur)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Acquire(ctx, st, name, holder, ttl, now) // released meanwhile
		}
		return nil, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	if cur.Holder != holder && t.UnixMilli() < cur.ExpiresMs && !holderDeadHere(cur.Holder) {
		return nil, &HeldError{Name: name, Holder: cur.Holder, Until: time.UnixMilli(cur.ExpiresMs)}
	}
	// Expired, or its holder died on this host: take over.
	info, err = layout.Replace(ctx, st, key, &doc, etag)
	if err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return nil, &HeldError{Name: name, Holder: "another run that took it over just now", Until: t.Add(ttl)}
		}
		return nil, fmt.Errorf("take over lease %s: %w", name, err)
	}
	l.etag = info.ETag
	return l, nil
}

// Renew extends the lease by its ttl; ErrLost when it was taken over.
func (l *Lease) Renew(ctx context.Context) error {
	doc := l.doc
	doc.ExpiresMs = l.now().Add(l.ttl).UnixMilli()
	info, err := layout.Replace(ctx, l.st, l.key, &doc, l.etag)
	if err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("renew lease %s: %w", l.doc.Name, ErrLost)
		}
		return fmt.Errorf("renew lease %s: %w", l.doc.Name, err)
	}
	l.doc, l.etag = doc, info.ETag
	return nil
}

// Expires is when the lease runs out unless renewed.
func (l *Lease) Expires() time.Time { return time.UnixMilli(l.doc.ExpiresMs) }

// Release deletes the lease if it is still ours.
func (l *Lease) Release(ctx context.Context) error {
	err := l.st.Delete(ctx, l.key, store.IfMatch(l.etag))
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("release lease %s: %w", l.doc.Name, err)
	}
	return nil
}

// Holder names this process as a lease holder: "HOST/pid-N".
func Holder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/pid-%d", host, os.Getpid())
}

// holderDeadHere reports a holder named by Holder on this host whose process
// no longer exists: its lease is stale at once, not only at expiry (a killed
// cron job on the same machine must not block the rerun for a whole TTL).
func holderDeadHere(holder string) bool {
	host, pidStr, ok := strings.Cut(holder, "/pid-")
	if !ok {
		return false
	}
	me, _ := os.Hostname()
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 || host != me || pid == os.Getpid() {
		return false
	}
	return !processAlive(pid)
}
