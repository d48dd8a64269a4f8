// Package lease owns the store leases that exclude concurrent long jobs
// (docs/design.md §10): created IfAbsent, renewed IfMatch, taken over IfMatch once
// expired, released with a conditional delete. Two cron jobs never work on
// the same thing at once; a crashed holder's lease expires.
//
// Every step is a guarded write on what was just read, so of two acquirers
// racing for one lease exactly one wins. A guard that fails on our own
// lease (a renewal whose response was lost landed after all, and the ETag
// we kept is stale) is told apart from a takeover by re-reading the lease:
// it is still ours when it names our holder id and our acquisition time.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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
	// Log receives the lease's life at info level (taken over, renewed, a
	// renewal that re-read the lease, released); nil logs nothing.
	Log  *slog.Logger
	st   store.Store
	doc  layout.Lease
	etag string
	ttl  time.Duration
	now  func() time.Time
	key  string
}

// maxAcquireRounds bounds Acquire's retries when the lease is released
// between its create and its read.
const maxAcquireRounds = 8

// Acquire takes the lease name for holder for ttl, or returns *HeldError.
func Acquire(ctx context.Context, st store.Store, name, holder string, ttl time.Duration, now func() time.Time) (*Lease, error) {
	return AcquireLogged(ctx, st, name, holder, ttl, now, nil)
}

// AcquireLogged is Acquire with a logger for the lease's life (see
// Lease.Log).
func AcquireLogged(ctx context.Context, st store.Store, name, holder string, ttl time.Duration, now func() time.Time, log *slog.Logger) (*Lease, error) {
	if now == nil {
		now = time.Now
	}
	key := layout.LeaseKey(name)
	for range maxAcquireRounds {
		t := now()
		doc := layout.Lease{Name: name, Holder: holder, AcquiredMs: t.UnixMilli(), ExpiresMs: t.Add(ttl).UnixMilli()}
		l := &Lease{Log: log, st: st, doc: doc, ttl: ttl, now: now, key: key}
		info, err := layout.Create(ctx, st, key, &doc)
		if err == nil {
			l.etag = info.ETag
			l.info("lease acquired", "expires", l.Expires())
			return l, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("acquire lease %s: %w", name, err)
		}
		var cur layout.Lease
		etag, err := layout.Load(ctx, st, key, &cur)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue // released meanwhile: create again
			}
			return nil, fmt.Errorf("acquire lease %s: %w", name, err)
		}
		if cur.Holder != holder && t.UnixMilli() < cur.ExpiresMs && !holderDeadHere(cur.Holder) {
			return nil, &HeldError{Name: name, Holder: cur.Holder, Until: time.UnixMilli(cur.ExpiresMs)}
		}
		// Expired, ours from an earlier attempt, or its holder died on
		// this host: take over, guarded by the ETag just read.
		info, err = layout.Replace(ctx, st, key, &doc, etag)
		if err != nil {
			if errors.Is(err, store.ErrPreconditionFailed) {
				return nil, &HeldError{Name: name, Holder: "another run that took it over just now", Until: t.Add(ttl)}
			}
			return nil, fmt.Errorf("take over lease %s: %w", name, err)
		}
		l.etag = info.ETag
		l.info("lease taken over", "from", cur.Holder, "expired", time.UnixMilli(cur.ExpiresMs), "expires", l.Expires())
		return l, nil
	}
	return nil, fmt.Errorf("acquire lease %s: created and released %d times meanwhile: %w", name, maxAcquireRounds, store.ErrConflict)
}

// Renew extends the lease by its ttl; ErrLost when it was taken over.
func (l *Lease) Renew(ctx context.Context) error {
	doc := l.doc
	doc.ExpiresMs = l.now().Add(l.ttl).UnixMilli()
	info, err := layout.Replace(ctx, l.st, l.key, &doc, l.etag)
	if errors.Is(err, store.ErrPreconditionFailed) {
		// The ETag we kept is stale: taken over, or an earlier renewal
		// of ours landed without our hearing of it. The lease says which.
		l.info("lease renewal lost its precondition; re-reading the lease")
		etag, rerr := l.reread(ctx)
		if rerr != nil {
			return fmt.Errorf("renew lease %s: %w", l.doc.Name, rerr)
		}
		info, err = layout.Replace(ctx, l.st, l.key, &doc, etag)
	}
	if err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("renew lease %s: %w", l.doc.Name, ErrLost)
		}
		return fmt.Errorf("renew lease %s: %w", l.doc.Name, err)
	}
	l.doc, l.etag = doc, info.ETag
	l.info("lease renewed", "expires", l.Expires())
	return nil
}

func (l *Lease) info(msg string, args ...any) {
	if l.Log != nil {
		l.Log.Info(msg, append([]any{"lease", l.doc.Name, "holder", l.doc.Holder}, args...)...)
	}
}

// reread loads the lease and returns its ETag if it is still ours, or an
// error wrapping ErrLost when another holder has it or it is gone.
func (l *Lease) reread(ctx context.Context) (string, error) {
	var cur layout.Lease
	etag, err := layout.Load(ctx, l.st, l.key, &cur)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: it was released or deleted", ErrLost)
	}
	if err != nil {
		return "", err
	}
	if cur.Holder != l.doc.Holder || cur.AcquiredMs != l.doc.AcquiredMs {
		return "", fmt.Errorf("%w: now held by %s", ErrLost, cur.Holder)
	}
	return etag, nil
}

// Expires is when the lease runs out unless renewed.
func (l *Lease) Expires() time.Time { return time.UnixMilli(l.doc.ExpiresMs) }

// Release deletes the lease if it is still ours.
func (l *Lease) Release(ctx context.Context) error {
	err := l.st.Delete(ctx, l.key, store.IfMatch(l.etag))
	if errors.Is(err, store.ErrPreconditionFailed) {
		// A renewal's lost response left our ETag stale: delete the lease
		// if it is still ours, leave it alone if another holder has it.
		etag, rerr := l.reread(ctx)
		if rerr != nil {
			if errors.Is(rerr, ErrLost) {
				return nil
			}
			return fmt.Errorf("release lease %s: %w", l.doc.Name, rerr)
		}
		err = l.st.Delete(ctx, l.key, store.IfMatch(etag))
	}
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("release lease %s: %w", l.doc.Name, err)
	}
	l.info("lease released")
	return nil
}

// Holder names this process as a lease holder, afresh on every call:
// "HOST/pid-N/SCOPE/NONCE". SCOPE names the PID namespace and the boot
// ("pidns-4026531836.boot-8a8a5645dd6f"; "unknown" where the platform does
// not tell), so a process id is only ever judged in the namespace and boot
// it belongs to; NONCE makes two acquirers in one process distinct holders.
func Holder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/pid-%d/%s/%s", host, os.Getpid(), scope(), nonce())
}

func nonce() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return hex.EncodeToString(b[:])
}

// scope names the PID namespace and boot of this process, or "unknown".
func scope() string {
	ns, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return "unknown"
	}
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	id := strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", "")
	if len(id) > 12 {
		id = id[:12]
	}
	if ns == "" || id == "" || strings.ContainsAny(ns+id, "/") {
		return "unknown"
	}
	return "pidns-" + ns + ".boot-" + id
}

// holderDeadHere reports a holder named by Holder in this host, PID
// namespace and boot whose process no longer exists: its lease is stale at
// once, not only at expiry (a killed cron job on the same machine must not
// block the rerun for a whole TTL). A holder from another host, namespace
// or boot, or one this function cannot parse, is never judged dead: its
// lease is waited out.
func holderDeadHere(holder string) bool {
	parts := strings.Split(holder, "/")
	if len(parts) != 4 || !strings.HasPrefix(parts[1], "pid-") {
		return false
	}
	me, _ := os.Hostname()
	sc := scope()
	pid, err := strconv.Atoi(strings.TrimPrefix(parts[1], "pid-"))
	if err != nil || pid <= 0 || parts[0] != me || parts[2] != sc || sc == "unknown" || pid == os.Getpid() {
		return false
	}
	return !processAlive(pid)
}
