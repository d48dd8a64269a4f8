// Package storeprobe proves that a store keeps the promises nereusctl's
// guarantees rest on (docs/s3.md, "Conditional writes"): a create with
// If-None-Match: * succeeds once and then fails with 412, an If-Match with
// a stale ETag fails with 412 and with the current one succeeds, a read and
// a listing after a write see it, the stored SHA-256 comes back, and a
// guarded delete removes only the version it names.
//
// Run checks them on a scratch key under tasks/probe-<nonce>/, which it
// removes afterwards, also when a check fails. Ensure keeps the result in
// the store (layout.StoreProbe) and probes again only when the stored one
// is missing, stale or for another store or endpoint: mutating commands
// call it once per run and refuse to write on a store that failed.
//
// A store that ignores the conditional headers turns every guarded write
// into a plain overwrite, silently: one successful write proves nothing,
// so every check compares the stored bytes too, not only the answer.
package storeprobe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The checks, in the order Run reports them.
const (
	CheckCreate         = "create-if-absent"
	CheckIfAbsent       = "if-none-match-refuses"
	CheckIfMatchRefuses = "if-match-refuses"
	CheckIfMatchAccepts = "if-match-accepts"
	CheckETag           = "etag-is-md5"
	CheckReadAfterWrite = "read-after-write"
	CheckList           = "list-after-write"
	CheckSHA256         = "sha256-stored"
	CheckDelete         = "delete-if-match"
)

// guarantees is what rests on each check, in the order Run reports them.
var guarantees = []struct{ name, guarantee string }{
	{CheckCreate, "immutable objects (data, manifests, checkpoints, quarantine records) and leases are created with If-None-Match: *"},
	{CheckIfAbsent, "nothing is written twice and one job holds a lease: a second If-None-Match: * PUT of a key fails with 412 and leaves its bytes"},
	{CheckIfMatchRefuses, "no lost update of a binding, stream head, lease or progress: a PUT with a stale If-Match ETag fails with 412 and leaves the bytes"},
	{CheckIfMatchAccepts, "a CAS with the current ETag succeeds (trims, checkpoints, compaction and lease renewals move on)"},
	{CheckETag, "ETags are the MD5 of the bytes, which nereusctl computes for If-Match and manifest checks (not so on SSE-KMS or SSE-C buckets)"},
	{CheckReadAfterWrite, "a read after a write returns the new bytes (a trim reads its head back; replay reads what was just written)"},
	{CheckList, "a listing shows a key just written (replay, gc and the checkpoint choice list the stream)"},
	{CheckSHA256, "the store keeps the SHA-256 every PUT sends and returns it on HEAD"},
	{CheckDelete, "guarded deletes (lease release, task removal, quarantine archiving) remove only the version read: a stale ETag or a missing key fails with 412"},
}

// CheckNames lists the checks Run makes, in order.
func CheckNames() []string {
	out := make([]string, len(guarantees))
	for i, g := range guarantees {
		out[i] = g.name
	}
	return out
}

// Check is one check's outcome.
type Check = layout.ProbeCheck

// Result is what Run found.
type Result struct {
	// Key is the scratch key the probe used (removed when Run returns).
	Key string
	// Checks holds one entry per check, in CheckNames order.
	Checks []Check
}

// OK reports whether every check held.
func (r *Result) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// ScratchPrefix is where a probe with nonce writes: tasks/probe-<nonce>/
// (free workflow space: gc removes a leftover after its grace).
func ScratchPrefix(nonce string) string { return layout.TaskPrefix("probe-" + nonce) }

// NewNonce returns 16 random hex digits.
func NewNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Options adjusts Run.
type Options struct {
	// Nonce names the scratch prefix (NewNonce when empty).
	Nonce string
	// KeepsSHA256 says whether the backend claims to keep every object's
	// SHA-256 (s3://, file:// and mem:// do; see KeepsSHA256). When false
	// the sha256-stored check holds unless the store returns a wrong one.
	KeepsSHA256 bool
}

// prober runs the checks against one scratch key.
type prober struct {
	st     store.Store
	key    string
	checks map[string]*Check
}

// fail records the first failure of a check (later ones only add to it).
func (p *prober) fail(name, format string, a ...any) {
	c := p.checks[name]
	msg := fmt.Sprintf(format, a...)
	if c.OK {
		c.OK, c.Detail = false, msg
		return
	}
	if len(c.Detail) < 2048 {
		c.Detail += "; " + msg
	}
}

func (p *prober) pass(name, detail string) {
	if c := p.checks[name]; c.OK {
		c.Detail = detail
	}
}

// outcome reports whether err is an answer a check judges (nil, a lost
// precondition, not found) rather than a failure to ask (access denied,
// credentials, a transient error that outlived the retries, cancellation):
// those end the probe.
func outcome(err error) bool {
	return err == nil || errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrNotFound)
}

// abort is the error that ends a probe at step what.
func (p *prober) abort(what string, err error) error {
	return fmt.Errorf("store probe of %s: %s %s: %w", p.st, what, p.key, err)
}

// read returns the stored bytes (nil, false when the key is missing).
func (p *prober) read(ctx context.Context) ([]byte, bool, error) {
	b, err := p.st.Get(ctx, p.key, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, p.abort("get", err)
	}
	return b, true, nil
}

// Run probes st on a scratch key under ScratchPrefix(o.Nonce) and returns
// one Check per CheckNames entry. A failed check is a result, not an
// error: the error is for a probe that could not ask (access denied,
// credentials, a store that did not answer, cancellation), and then no
// result is given. The scratch key is removed before Run returns, with a
// context of its own when ctx is done.
func Run(ctx context.Context, st store.Store, o Options) (res *Result, err error) {
	if o.Nonce == "" {
		o.Nonce = NewNonce()
	}
	prefix := ScratchPrefix(o.Nonce)
	p := &prober{st: st, key: prefix + "object", checks: map[string]*Check{}}
	res = &Result{Key: p.key}
	for _, g := range guarantees {
		c := &Check{Name: g.name, Guarantee: g.guarantee, OK: true}
		p.checks[g.name] = c
	}
	defer func() {
		if cerr := cleanup(ctx, st, prefix); cerr != nil && err == nil {
			res, err = nil, cerr
		}
	}()
	if err := p.run(ctx, o); err != nil {
		return nil, err
	}
	for _, g := range guarantees {
		res.Checks = append(res.Checks, *p.checks[g.name])
	}
	return res, nil
}

// body is the scratch object's bytes at step n: each step's differ from
// the others' in content and length, so a store that kept the wrong ones
// shows it.
func body(nonce string, n int) []byte {
	return fmt.Appendf(nil, "nereusctl store probe %s step %d%s\n", nonce, n, bytes.Repeat([]byte{'.'}, n))
}

func (p *prober) run(ctx context.Context, o Options) error {
	nonce := o.Nonce
	a, b, c, d := body(nonce, 1), body(nonce, 2), body(nonce, 3), body(nonce, 4)
	current := a // what the key should hold

	// 1. A create on a fresh key succeeds.
	info, err := p.st.Put(ctx, p.key, a, store.IfAbsent())
	switch {
	case err == nil:
		p.pass(CheckCreate, "an If-None-Match: * PUT of a new key succeeded")
		if info.ETag != store.ETagOf(a) {
			p.fail(CheckETag, "the PUT answered ETag %q, not the MD5 of the bytes (%s)", info.ETag, store.ETagOf(a))
		}
	case errors.Is(err, store.ErrPreconditionFailed):
		p.fail(CheckCreate, "an If-None-Match: * PUT of a new key failed with 412: %v", err)
		// Go on with an unguarded write, so the other checks have an
		// object to judge.
		if _, err := p.st.Put(ctx, p.key, a, store.None()); err != nil {
			return p.abort("put", err)
		}
	default:
		return p.abort("put (if-absent)", err)
	}
	got, ok, err := p.read(ctx)
	if err != nil {
		return err
	}
	if !ok || !bytes.Equal(got, a) {
		p.fail(CheckReadAfterWrite, "a GET right after the create returned %s", describe(got, ok, a))
	}

	// 2. A second create of the same key fails with 412 and keeps the
	// bytes; 3. so does a replace with a stale ETag.
	stale := store.ETagOf([]byte("not the probe object's bytes"))
	if current, err = p.mustRefuse(ctx, CheckIfAbsent, "a second If-None-Match: * PUT of the key", "If-None-Match", b, store.IfAbsent(), current); err != nil {
		return err
	}
	if current, err = p.mustRefuse(ctx, CheckIfMatchRefuses, "a PUT with If-Match on a stale ETag", "If-Match", c, store.IfMatch(stale), current); err != nil {
		return err
	}

	// 4. A replace with the current ETag succeeds and is read back.
	info, err = p.st.Put(ctx, p.key, d, store.IfMatch(store.ETagOf(current)))
	switch {
	case err == nil:
		p.pass(CheckIfMatchAccepts, "a PUT with If-Match on the current ETag succeeded")
		if info.ETag != store.ETagOf(d) {
			p.fail(CheckETag, "the PUT answered ETag %q, not the MD5 of the bytes (%s)", info.ETag, store.ETagOf(d))
		}
		current = d
	case errors.Is(err, store.ErrPreconditionFailed):
		p.fail(CheckIfMatchAccepts, "a PUT with If-Match on the current ETag (the MD5 of the stored bytes) failed with 412: %v", err)
	default:
		return p.abort("put (if-match, current etag)", err)
	}
	if got, ok, err = p.read(ctx); err != nil {
		return err
	}
	if !bytes.Equal(got, current) {
		p.fail(CheckReadAfterWrite, "a GET after the If-Match PUT returned %s", describe(got, ok, current))
	}
	p.pass(CheckReadAfterWrite, "every GET after a write returned the bytes just written")

	// 5. The listing shows the key; HEAD has its ETag and SHA-256.
	list, err := p.st.List(ctx, ScratchPrefix(nonce))
	if err != nil {
		return p.abort("list", err)
	}
	listed := false
	for _, in := range list {
		if in.Key == p.key {
			listed = true
			if in.Size != int64(len(current)) {
				p.fail(CheckList, "the listing shows the key with %d bytes, not %d", in.Size, len(current))
			}
		}
	}
	if !listed {
		p.fail(CheckList, "a LIST of %s right after the writes does not show the key (%d keys listed)", ScratchPrefix(nonce), len(list))
	}
	p.pass(CheckList, "a LIST right after the writes shows the key with its size")
	head, err := p.st.Head(ctx, p.key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return p.abort("head", err)
	}
	switch {
	case err != nil:
		p.fail(CheckReadAfterWrite, "a HEAD after the writes found no object")
		p.fail(CheckSHA256, "a HEAD after the writes found no object")
	default:
		if head.ETag != store.ETagOf(current) {
			p.fail(CheckETag, "HEAD answered ETag %q, not the MD5 of the bytes (%s)", head.ETag, store.ETagOf(current))
		}
		switch want := store.SHA256Of(current); {
		case head.SHA256 == want:
			p.pass(CheckSHA256, "HEAD returned the SHA-256 the PUT sent")
		case head.SHA256 == "" && !o.KeepsSHA256:
			p.pass(CheckSHA256, "this store keeps no SHA-256 (identity rests on the digests the documents record)")
		case head.SHA256 == "":
			p.fail(CheckSHA256, "HEAD returned no SHA-256: the store does not keep the x-amz-checksum-sha256 every PUT sends")
		default:
			p.fail(CheckSHA256, "HEAD returned SHA-256 %s, not the %s the PUT sent", head.SHA256, want)
		}
	}
	p.pass(CheckETag, "the ETags the PUTs and HEAD answered are the MD5 of the bytes")

	// 6. A guarded delete: a stale ETag fails, the current one deletes, a
	// missing key fails.
	err = p.st.Delete(ctx, p.key, store.IfMatch(stale))
	switch {
	case err == nil:
		p.fail(CheckDelete, "a DELETE with If-Match on a stale ETag succeeded")
	case errors.Is(err, store.ErrPreconditionFailed):
	default:
		return p.abort("delete (if-match, stale etag)", err)
	}
	if err == nil {
		// Gone: put it back for the rest.
		if _, err := p.st.Put(ctx, p.key, current, store.None()); err != nil {
			return p.abort("put", err)
		}
	} else if _, err := p.st.Head(ctx, p.key); err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			return p.abort("head", err)
		}
		p.fail(CheckDelete, "a DELETE with If-Match on a stale ETag answered 412 but removed the object")
		if _, err := p.st.Put(ctx, p.key, current, store.None()); err != nil {
			return p.abort("put", err)
		}
	}
	if err := p.st.Delete(ctx, p.key, store.IfMatch(store.ETagOf(current))); err != nil {
		if !outcome(err) {
			return p.abort("delete (if-match, current etag)", err)
		}
		p.fail(CheckDelete, "a DELETE with If-Match on the current ETag failed: %v", err)
	}
	if _, err := p.st.Head(ctx, p.key); err == nil {
		p.fail(CheckDelete, "the object is still there after a DELETE with If-Match on the current ETag")
	} else if !errors.Is(err, store.ErrNotFound) {
		return p.abort("head", err)
	}
	err = p.st.Delete(ctx, p.key, store.IfMatch(store.ETagOf(current)))
	switch {
	case err == nil:
		p.fail(CheckDelete, "a DELETE with If-Match of a missing key succeeded (it must fail with 412)")
	case errors.Is(err, store.ErrPreconditionFailed):
	default:
		return p.abort("delete (if-match, missing key)", err)
	}
	p.pass(CheckDelete, "a DELETE with If-Match failed with 412 on a stale ETag and on a missing key, and removed the object on the current ETag")
	return nil
}

// mustRefuse makes a guarded PUT of data that must fail with 412 and
// leave the object holding current (what it should hold before), judged
// by check; header names the condition for the detail. It returns what
// the object holds after.
func (p *prober) mustRefuse(ctx context.Context, check, what, header string, data []byte, g store.Guard, current []byte) ([]byte, error) {
	_, err := p.st.Put(ctx, p.key, data, g)
	switch {
	case err == nil:
		p.fail(check, "%s succeeded: the store ignores %s and overwrote the object", what, header)
		current = data
	case errors.Is(err, store.ErrPreconditionFailed):
		p.pass(check, what+" failed with 412 and the object kept its bytes")
	default:
		return nil, p.abort("put ("+g.String()+")", err)
	}
	got, ok, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case bytes.Equal(got, current):
	case bytes.Equal(got, data):
		p.fail(check, "%s answered 412 but the object holds its bytes", what)
		current = data
	default:
		p.fail(CheckReadAfterWrite, "a GET after %s returned %s", what, describe(got, ok, current))
	}
	return current, nil
}

// describe names what a read returned against what it should have.
func describe(got []byte, ok bool, want []byte) string {
	switch {
	case !ok:
		return "no object (not found)"
	case bytes.Equal(got, want):
		return "the right bytes"
	default:
		return fmt.Sprintf("other bytes (%d, want %d)", len(got), len(want))
	}
}

// cleanupTimeout bounds the removal of the scratch key after the run.
const cleanupTimeout = 30 * time.Second

// cleanup removes everything under prefix, with its own deadline when ctx
// is already done.
func cleanup(ctx context.Context, st store.Store, prefix string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	left, err := st.List(cctx, prefix)
	if err != nil {
		return fmt.Errorf("store probe of %s: remove %s: %w", st, prefix, err)
	}
	for _, in := range left {
		if err := st.Delete(cctx, in.Key, store.None()); err != nil {
			return fmt.Errorf("store probe of %s: remove %s: %w", st, in.Key, err)
		}
	}
	return nil
}
