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
//
// A lease bounds the work done under it in time (Keep, Prove): the work
// may act only while the last write of the lease it heard confirmed (the
// acquisition or a renewal) leaves more than Margin of the TTL, measured
// on this host's clocks from when that write was sent. Past that the work
// is stopped locally, whether or not a renewal is still under way, so it
// ends before another holder can take the lease over.
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
	"sync"
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

// ErrLost is returned by Renew when another holder took the lease, and
// is what every failure to keep a lease wraps (ErrExpired included).
var ErrLost = errors.New("lease lost")

// ErrExpired is a lease whose holder could not confirm a renewal in time:
// its work is stopped (Keep) and may not act (Prove), since another holder
// may take the lease over once it runs out. It wraps ErrLost.
var ErrExpired = fmt.Errorf("%w: not renewed in time", ErrLost)

// Lease is a held lease.
type Lease struct {
	// Log receives the lease's life at info level (taken over, renewed, a
	// renewal that re-read the lease, released); nil logs nothing.
	Log *slog.Logger
	st  store.Store
	ttl time.Duration
	now func() time.Time
	key string
	// name and holder are the lease's and this acquisition's (never
	// changed after it).
	name, holder string

	mu   sync.Mutex // guards doc, etag, valid, validWall
	doc  layout.Lease
	etag string
	// valid is until when this holder may act: the send time of the last
	// write of the lease it heard confirmed, plus ttl - Margin(ttl), on
	// the monotonic clock; validWall is the same on the wall clock (which,
	// unlike the monotonic clock, also runs while the host is suspended).
	// Both must lie ahead (Prove).
	valid, validWall time.Time
}

// Margin is the part of a lease's TTL its holder gives up: it stops acting
// at expiry - Margin by its own clocks. It covers the skew between this
// host's wall clock and that of a host that may take the lease over (the
// expiry is written in this host's wall time and read in the other's), and
// a store request sent just before the deadline that lands after it. It is
// a quarter of the TTL (30s of the default 2m): hosts are assumed to agree
// on the time to within an eighth of the TTL (docs/design.md, "Leases").
func Margin(ttl time.Duration) time.Duration { return ttl / 4 }

// maxAcquireRounds bounds Acquire's retries when the lease is released
// between its create and its read.
const maxAcquireRounds = 8

// Acquire takes the lease name for holder for ttl, or returns *HeldError.
// holder must name this acquisition alone (Holder(): a fresh nonce each
// call): a live lease is never taken, not even one naming holder, and a
// stored lease with holder's id and acquisition time is taken for our own
// write whose response was lost. log, when not nil, records the lease's
// life (see Lease.Log); now nil is time.Now.
func Acquire(ctx context.Context, st store.Store, name, holder string, ttl time.Duration, now func() time.Time, log *slog.Logger) (*Lease, error) {
	if now == nil {
		now = time.Now
	}
	key := layout.LeaseKey(name)
	for range maxAcquireRounds {
		sent := time.Now()
		t := now()
		doc := layout.Lease{Name: name, Holder: holder, AcquiredMs: t.UnixMilli(), ExpiresMs: t.Add(ttl).UnixMilli()}
		l := &Lease{Log: log, st: st, doc: doc, ttl: ttl, now: now, key: key, name: name, holder: holder}
		info, err := layout.Create(ctx, st, key, &doc)
		if err == nil {
			l.etag = info.ETag
			l.confirmed(sent)
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
			return nil, corruptHint(name, fmt.Errorf("acquire lease %s: %w", name, err))
		}
		// A live lease is never taken, not even one naming this holder:
		// each acquisition is a holder of its own (Holder's nonce), so a
		// lease naming us is another acquisition's, in this process or in
		// an earlier one that made the same id.
		if t.UnixMilli() < cur.ExpiresMs && !holderDeadHere(cur.Holder) {
			return nil, &HeldError{Name: name, Holder: cur.Holder, Until: time.UnixMilli(cur.ExpiresMs)}
		}
		// Expired, or its holder died on this host: take over, guarded by
		// the ETag just read.
		info, err = layout.Replace(ctx, st, key, &doc, etag)
		if err != nil {
			if errors.Is(err, store.ErrPreconditionFailed) {
				return nil, &HeldError{Name: name, Holder: "another run that took it over just now", Until: t.Add(ttl)}
			}
			return nil, fmt.Errorf("take over lease %s: %w", name, err)
		}
		l.etag = info.ETag
		l.confirmed(sent)
		l.info("lease taken over", "from", cur.Holder, "expired", time.UnixMilli(cur.ExpiresMs), "expires", l.Expires())
		return l, nil
	}
	return nil, fmt.Errorf("acquire lease %s: created and released %d times meanwhile: %w", name, maxAcquireRounds, store.ErrConflict)
}

// Renew extends the lease by its ttl; ErrLost when it was taken over. A
// confirmed renewal lets the holder act until ttl - Margin after it was
// sent (Prove).
func (l *Lease) Renew(ctx context.Context) error {
	sent := time.Now()
	l.mu.Lock()
	doc, etag := l.doc, l.etag
	l.mu.Unlock()
	doc.ExpiresMs = l.now().Add(l.ttl).UnixMilli()
	info, err := layout.Replace(ctx, l.st, l.key, &doc, etag)
	if errors.Is(err, store.ErrPreconditionFailed) {
		// The ETag we kept is stale: taken over, or an earlier renewal
		// of ours landed without our hearing of it. The lease says which.
		l.info("lease renewal lost its precondition; re-reading the lease")
		etag, rerr := l.reread(ctx)
		if rerr != nil {
			return fmt.Errorf("renew lease %s: %w", doc.Name, rerr)
		}
		info, err = layout.Replace(ctx, l.st, l.key, &doc, etag)
	}
	if err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("renew lease %s: %w", doc.Name, ErrLost)
		}
		return fmt.Errorf("renew lease %s: %w", doc.Name, err)
	}
	l.mu.Lock()
	l.doc, l.etag = doc, info.ETag
	l.mu.Unlock()
	l.confirmed(sent)
	l.info("lease renewed", "expires", l.Expires())
	return nil
}

// confirmed notes a write of the lease sent at sent (by time.Now) and
// heard confirmed: the holder may act until ttl - Margin after it.
func (l *Lease) confirmed(sent time.Time) {
	d := l.ttl - Margin(l.ttl)
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := sent.Add(d); v.After(l.valid) {
		l.valid, l.validWall = v, sent.Round(0).Add(d)
	}
}

// ValidUntil is until when the holder may act on this lease (by the
// monotonic clock): the send time of the last confirmed write of the lease
// plus its TTL less Margin.
func (l *Lease) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.valid
}

// Prove reports whether the holder may still act on the lease: nil while
// the last confirmed write of the lease (its acquisition or a renewal)
// leaves more than Margin of the TTL by both the monotonic and the wall
// clock; else an error wrapping ErrExpired (the lease may already be, or
// may any moment become, another holder's). It reads no store: it is
// called before every destructive step (gc's deletes, compaction's,
// repair's and the trim's publishes), so that a holder paused past its TTL
// (SIGSTOP, a VM pause, a suspended host) finds out before it acts on
// decisions made before the pause.
func (l *Lease) Prove(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		if c := context.Cause(ctx); c != nil && errors.Is(c, ErrLost) {
			return c
		}
		return err
	}
	l.mu.Lock()
	valid, wall, name, exp := l.valid, l.validWall, l.name, l.doc.ExpiresMs
	l.mu.Unlock()
	now := time.Now()
	if now.Before(valid) && now.Round(0).Before(wall) {
		return nil
	}
	late := max(now.Sub(valid), now.Round(0).Sub(wall))
	return fmt.Errorf("lease %s: %w: no renewal confirmed for %s past the time the holder may act on it (expiry %s less the margin of %s)",
		name, ErrExpired, late.Round(time.Millisecond), time.UnixMilli(exp).UTC().Format(time.RFC3339Nano), Margin(l.ttl))
}

func (l *Lease) info(msg string, args ...any) {
	if l.Log != nil {
		l.Log.Info(msg, append([]any{"lease", l.name, "holder", l.holder}, args...)...)
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
	l.mu.Lock()
	mine := l.doc
	l.mu.Unlock()
	if cur.Holder != mine.Holder || cur.AcquiredMs != mine.AcquiredMs {
		return "", fmt.Errorf("%w: now held by %s", ErrLost, cur.Holder)
	}
	return etag, nil
}

// Expires is when the lease runs out unless renewed (as written in it).
func (l *Lease) Expires() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.UnixMilli(l.doc.ExpiresMs)
}

// Name is the lease's name.
func (l *Lease) Name() string { return l.name }

// Holder is the holder id this lease was acquired as.
func (l *Lease) Holder() string { return l.holder }

// Release deletes the lease if it is still ours.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	etag := l.etag
	l.mu.Unlock()
	err := l.st.Delete(ctx, l.key, store.IfMatch(etag))
	if errors.Is(err, store.ErrPreconditionFailed) {
		// A renewal's lost response left our ETag stale: delete the lease
		// if it is still ours, leave it alone if another holder has it.
		etag, rerr := l.reread(ctx)
		if rerr != nil {
			if errors.Is(rerr, ErrLost) {
				return nil
			}
			return fmt.Errorf("release lease %s: %w", l.name, rerr)
		}
		err = l.st.Delete(ctx, l.key, store.IfMatch(etag))
	}
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("release lease %s: %w", l.name, err)
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
