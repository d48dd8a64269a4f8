package storeprobe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// DefaultMaxAge is how long a stored probe result is trusted
// (--probe-max-age).
const DefaultMaxAge = 7 * 24 * time.Hour

// maxSkew is how far in the future a stored result may be dated (another
// machine's clock) before it is not trusted.
const maxSkew = 5 * time.Minute

// Target names what a probe result is for: the store's canonical identity
// and the endpoint the requests go to.
type Target struct {
	Store    string
	Endpoint string
}

// backend is the store under st's decorators.
func backend(st store.Store) store.Store {
	for {
		u, ok := st.(interface{ Unwrap() store.Store })
		if !ok {
			return st
		}
		st = u.Unwrap()
	}
}

// Needed reports whether st must be probed before it is trusted with
// mutations. file:// and mem:// are proved by construction: their guards
// are nereusctl's own code (a lock and a compare on the local file system,
// a map under a mutex), which the conformance suite tests. Everything else
// (s3://, and a store it cannot see through) is probed.
func Needed(st store.Store) bool {
	switch backend(st).(type) {
	case *store.File, *store.Mem:
		return false
	}
	return true
}

// KeepsSHA256 reports whether st's backend claims to keep the SHA-256 of
// every object: s3:// (the x-amz-checksum-sha256 every PUT sends),
// file:// and mem:// (computed).
func KeepsSHA256(st store.Store) bool {
	switch backend(st).(type) {
	case *store.S3, *store.File, *store.Mem:
		return true
	}
	return false
}

// TargetOf is st's Target: s3://BUCKET/PREFIX and the endpoint ("aws" for
// AWS's own); another store's name and "local".
func TargetOf(st store.Store) Target {
	b := backend(st)
	if s3, ok := b.(*store.S3); ok {
		ep := s3.Endpoint()
		if ep == "" {
			ep = "aws"
		}
		return Target{Store: strings.TrimSuffix(s3.String(), "/"), Endpoint: ep}
	}
	return Target{Store: b.String(), Endpoint: "local"}
}

// EnsureOptions adjusts Ensure.
type EnsureOptions struct {
	Target Target
	// Build names this nereusctl, recorded in a new result.
	Build string
	// MaxAge is how long a stored result is trusted (--probe-max-age,
	// DefaultMaxAge); 0 trusts none: every call probes.
	MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Log receives a line when the probe runs and why (nil: none).
	Log *slog.Logger
	// Probe adjusts the probe itself (its nonce, KeepsSHA256).
	Probe Options
	// Force probes even when the stored result is fresh ('store probe').
	Force bool
}

func (o *EnsureOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Outcome is what Ensure decided.
type Outcome struct {
	// Doc is the probe result the decision rests on: the stored one, or
	// the one this run made.
	Doc *layout.StoreProbe
	// Probed is set when this run probed; Reason says why (no stored
	// result, a stale one, one for another endpoint …).
	Probed bool
	Reason string
	// Recorded is set when this run's result was written to the store.
	Recorded bool
}

// Stale returns why a stored result cannot be trusted for o.Target now
// ("" when it can).
func Stale(doc *layout.StoreProbe, o EnsureOptions) string {
	now := o.now()
	at := time.UnixMilli(doc.ProbedMs)
	switch {
	case doc.Store != o.Target.Store:
		return fmt.Sprintf("the stored result is for %s", doc.Store)
	case doc.Endpoint != o.Target.Endpoint:
		return fmt.Sprintf("the stored result was probed through endpoint %s, not %s", doc.Endpoint, o.Target.Endpoint)
	case at.After(now.Add(maxSkew)):
		return fmt.Sprintf("the stored result is dated %s, in the future", at.UTC().Format(time.RFC3339))
	case now.Sub(at) > o.MaxAge || o.MaxAge <= 0:
		return fmt.Sprintf("the stored result is from %s, older than %s (--probe-max-age)", at.UTC().Format(time.RFC3339), o.MaxAge)
	}
	for _, name := range CheckNames() {
		if !slices.ContainsFunc(doc.Checks, func(c layout.ProbeCheck) bool { return c.Name == name }) {
			return fmt.Sprintf("the stored result (by %s) has no check %s", doc.Build, name)
		}
	}
	return ""
}

// Ensure returns the probe result mutations of st may rest on: the stored
// one (layout.StoreProbeKey) when it is for o.Target and younger than
// o.MaxAge, else a new probe's, which it records in the store (If-Match on
// the stored one's ETag, IfAbsent when there is none; losing to a
// concurrent recorder keeps the other's). A stored result that does not
// decode is probed again and replaced. The outcome's Doc may be a failed
// result: Refusal says so. The error is for a store that could not be
// read or probed.
func Ensure(ctx context.Context, st store.Store, o EnsureOptions) (*Outcome, error) {
	doc, etag, err := layout.LoadStoreProbe(ctx, st)
	reason := ""
	switch {
	case err == nil:
		reason = Stale(doc, o)
		if reason == "" && !o.Force {
			return &Outcome{Doc: doc}, nil
		}
		if reason == "" {
			reason = "asked for"
		}
	case errors.Is(err, store.ErrNotFound):
		reason = "no probe result is stored"
	case errors.Is(err, layout.ErrCorruptDocument), errors.Is(err, layout.ErrLegacyDocument):
		reason = fmt.Sprintf("the stored result does not decode (%v)", err)
	default:
		return nil, fmt.Errorf("read the store probe result %s: %w", layout.StoreProbeKey, err)
	}
	if o.Log != nil {
		o.Log.Info("probing the store before a mutation", "store", o.Target.Store, "endpoint", o.Target.Endpoint, "reason", reason)
	}
	res, err := Run(ctx, st, o.Probe)
	if err != nil {
		return nil, err
	}
	doc = Document(res, o)
	recorded, err := Record(ctx, st, doc, etag)
	if err != nil {
		return nil, err
	}
	return &Outcome{Doc: doc, Probed: true, Reason: reason, Recorded: recorded}, nil
}

// Document is the probe result of res for o.Target, dated now.
func Document(res *Result, o EnsureOptions) *layout.StoreProbe {
	return &layout.StoreProbe{
		Store: o.Target.Store, Endpoint: o.Target.Endpoint, ProbedMs: o.now().UnixMilli(), Build: o.Build,
		OK: res.OK(), Checks: append([]layout.ProbeCheck(nil), res.Checks...),
	}
}

// Record writes doc to layout.StoreProbeKey: If-Match on etag (the stored
// result's, "" when none was read), else IfAbsent; when the key exists
// though none was read (one too large to read), If-Match on its ETag. It
// reports false, and no error, when another run recorded a result in
// between (that one stands; both are probes of the same store).
func Record(ctx context.Context, st store.Store, doc *layout.StoreProbe, etag string) (bool, error) {
	var err error
	if etag == "" {
		if _, err = layout.Create(ctx, st, layout.StoreProbeKey, doc); errors.Is(err, store.ErrPreconditionFailed) {
			var info store.ObjectInfo
			if info, err = st.Head(ctx, layout.StoreProbeKey); err == nil {
				_, err = layout.Replace(ctx, st, layout.StoreProbeKey, doc, info.ETag)
			}
		}
	} else {
		_, err = layout.Replace(ctx, st, layout.StoreProbeKey, doc, etag)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("record the store probe result %s: %w", layout.StoreProbeKey, err)
}

// ErrUnproved marks a refusal to mutate a store whose probe failed.
var ErrUnproved = errkind.New(errkind.Corrupt, "the store does not keep the promises mutations rest on")

// Hint is the operator hint of a refusal.
const Hint = "the store (or a proxy or gateway in front of it) does not honour the conditional requests every guarded write needs: see docs/s3.md (\"Conditional writes\"); " +
	"fix it, then run 'nereusctl store probe' again. Read-only commands still work; --skip-store-probe is only for a store known good"

// UnprovedError is the refusal of a mutation on a store whose probe
// failed: it names each broken guarantee.
type UnprovedError struct {
	Doc *layout.StoreProbe
}

func (e *UnprovedError) Error() string {
	return fmt.Sprintf("refused: %s failed its store probe (%s, %s): %s; nothing was changed",
		e.Doc.Store, time.UnixMilli(e.Doc.ProbedMs).UTC().Format(time.RFC3339), e.Doc.Build, BrokenList(e.Doc))
}

// BrokenList names each failed check of doc with what the store did and
// the guarantee it breaks.
func BrokenList(doc *layout.StoreProbe) string {
	var b strings.Builder
	for i, c := range doc.Broken() {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s (guarantee: %s)", c.Name, c.Detail, c.Guarantee)
	}
	return b.String()
}

// Failed is the error of a 'store probe' whose result doc failed (nil
// when it passed): it names each broken guarantee.
func Failed(doc *layout.StoreProbe) error {
	if doc == nil || doc.OK {
		return nil
	}
	return errkind.MarkHint(fmt.Errorf("store probe of %s: %d of %d checks failed: %s", doc.Store, len(doc.Broken()), len(doc.Checks), BrokenList(doc)), errkind.Corrupt, Hint)
}

func (e *UnprovedError) Unwrap() error { return ErrUnproved }

// Kind is errkind.Corrupt: the store failed a verification.
func (e *UnprovedError) Kind() errkind.Kind { return errkind.Corrupt }

// Refusal is the error a mutation returns on a store whose probe result
// doc failed (nil when it passed).
func Refusal(doc *layout.StoreProbe) error {
	if doc == nil || doc.OK {
		return nil
	}
	return errkind.Hint(&UnprovedError{Doc: doc}, Hint)
}

// Warning is the line a read-only command prints on a store whose stored
// probe result failed ("" when it passed).
func Warning(doc *layout.StoreProbe) string {
	if doc == nil || doc.OK {
		return ""
	}
	names := make([]string, 0, len(doc.Checks))
	for _, c := range doc.Broken() {
		names = append(names, c.Name)
	}
	return fmt.Sprintf("warning: %s failed its store probe (%s): %s; mutations are refused until it passes (docs/s3.md, \"Conditional writes\"; rerun 'nereusctl store probe')",
		doc.Store, time.UnixMilli(doc.ProbedMs).UTC().Format(time.RFC3339), strings.Join(names, ", "))
}
