package storeprobe_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/storeprobe"
	"github.com/nereusctl/nereusctl/internal/testutil/faultstore"
	"github.com/nereusctl/nereusctl/internal/testutil/s3lax"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

func TestMain(m *testing.M) {
	code := m.Run()
	s3server.Stop()
	os.Exit(code)
}

func broken(r *storeprobe.Result) []string {
	var out []string
	for _, c := range r.Broken() {
		out = append(out, c.Name)
	}
	return out
}

// mustRun probes st and requires that exactly the checks want fail, and
// that the scratch prefix is empty afterwards.
func mustRun(t *testing.T, st store.Store, want ...string) *storeprobe.Result {
	t.Helper()
	ctx := context.Background()
	nonce := storeprobe.NewNonce()
	res, err := storeprobe.Run(ctx, st, storeprobe.Options{Nonce: nonce, KeepsSHA256: storeprobe.KeepsSHA256(st)})
	if err != nil {
		t.Fatalf("probe of %s: %v", st, err)
	}
	if len(res.Checks) != len(storeprobe.CheckNames()) {
		t.Fatalf("%d checks, want %d", len(res.Checks), len(storeprobe.CheckNames()))
	}
	for i, c := range res.Checks {
		if c.Name != storeprobe.CheckNames()[i] || c.Guarantee == "" || c.Detail == "" {
			t.Errorf("check %d: %+v: want name %s with a guarantee and a detail", i, c, storeprobe.CheckNames()[i])
		}
	}
	if got := broken(res); !slices.Equal(got, want) {
		for _, c := range res.Checks {
			t.Logf("%s ok=%v: %s", c.Name, c.OK, c.Detail)
		}
		t.Fatalf("broken checks %v, want %v", got, want)
	}
	if res.OK() != (len(want) == 0) {
		t.Fatalf("OK() = %v with broken checks %v", res.OK(), want)
	}
	left, err := st.List(ctx, storeprobe.ScratchPrefix(nonce))
	if err != nil || len(left) != 0 {
		t.Fatalf("the probe left %v (%v)", left, err)
	}
	return res
}

// lax is a mem store with one promise broken, for the check that must
// catch it.
type lax struct {
	store.Store
	ignoreIfAbsent, ignoreIfMatch bool
	ignoreDeleteGuard             bool
	hideFromList                  bool
	noSHA256, wrongSHA256         bool
	staleReads                    bool
	wrongETag                     bool
	writesOn412                   bool
	last                          map[string][]byte
}

func (l *lax) Unwrap() store.Store { return l.Store }

func (l *lax) Put(ctx context.Context, key string, data []byte, g store.Guard) (store.ObjectInfo, error) {
	if (g.IsIfAbsent() && l.ignoreIfAbsent) || (!g.IsIfAbsent() && !g.IsNone() && l.ignoreIfMatch) {
		g = store.None()
	}
	if l.staleReads {
		if cur, err := l.Store.Get(ctx, key, nil); err == nil {
			if l.last == nil {
				l.last = map[string][]byte{}
			}
			l.last[key] = cur
		}
	}
	info, err := l.Store.Put(ctx, key, data, g)
	if l.writesOn412 && errors.Is(err, store.ErrPreconditionFailed) {
		_, _ = l.Store.Put(ctx, key, data, store.None())
	}
	if l.wrongETag {
		info.ETag = strings.Repeat("0", 32)
	}
	return info, err
}

func (l *lax) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	if old, ok := l.last[key]; ok && l.staleReads {
		return old, nil
	}
	return l.Store.Get(ctx, key, r)
}

func (l *lax) Head(ctx context.Context, key string) (store.ObjectInfo, error) {
	info, err := l.Store.Head(ctx, key)
	switch {
	case l.noSHA256:
		info.SHA256 = ""
	case l.wrongSHA256 && err == nil:
		info.SHA256 = strings.Repeat("a", 64)
	}
	return info, err
}

func (l *lax) Delete(ctx context.Context, key string, g store.Guard) error {
	if l.ignoreDeleteGuard {
		g = store.None()
	}
	return l.Store.Delete(ctx, key, g)
}

func (l *lax) List(ctx context.Context, prefix string) ([]store.ObjectInfo, error) {
	out, err := l.Store.List(ctx, prefix)
	if l.hideFromList && strings.HasPrefix(prefix, "tasks/probe-") {
		return nil, err
	}
	return out, err
}

// Each broken promise is caught by its own check, and only by it; an
// honest store passes.
func TestProbeCatchesEachBrokenPromise(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    lax
		want []string
	}{
		{"honest", lax{}, nil},
		{"ignores If-None-Match", lax{ignoreIfAbsent: true}, []string{storeprobe.CheckIfAbsent}},
		{"ignores If-Match", lax{ignoreIfMatch: true}, []string{storeprobe.CheckIfMatchRefuses}},
		{"ignores both", lax{ignoreIfAbsent: true, ignoreIfMatch: true}, []string{storeprobe.CheckIfAbsent, storeprobe.CheckIfMatchRefuses}},
		{"ignores the delete guard", lax{ignoreDeleteGuard: true}, []string{storeprobe.CheckDelete}},
		{"lists late", lax{hideFromList: true}, []string{storeprobe.CheckList}},
		{"keeps no SHA-256", lax{noSHA256: true}, []string{storeprobe.CheckSHA256}},
		{"returns a wrong SHA-256", lax{wrongSHA256: true}, []string{storeprobe.CheckSHA256}},
		{"reads stale bytes", lax{staleReads: true}, []string{storeprobe.CheckReadAfterWrite}},
		{"ETags that are not MD5", lax{wrongETag: true}, []string{storeprobe.CheckETag}},
		{"answers 412 but writes", lax{writesOn412: true}, []string{storeprobe.CheckIfAbsent, storeprobe.CheckIfMatchRefuses}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.l
			l.Store = store.NewMem(t.Name())
			res := mustRun(t, &l, tc.want...)
			for _, c := range res.Broken() {
				t.Logf("%s: %s", c.Name, c.Detail)
			}
		})
	}
}

// A store that keeps no SHA-256 and does not claim to passes that check.
func TestProbeSHA256OnlyWhereClaimed(t *testing.T) {
	l := &lax{Store: store.NewMem("x"), noSHA256: true}
	res, err := storeprobe.Run(context.Background(), l, storeprobe.Options{KeepsSHA256: false})
	if err != nil || !res.OK() {
		t.Fatalf("probe: %v %v", err, broken(res))
	}
}

// An S3 endpoint that stores objects but ignores If-None-Match and
// If-Match fails the probe on exactly those two checks (through the real
// S3 backend: the guarded delete holds, because the backend HEADs before
// an If-Match DELETE), and the probe removes its scratch key. The same
// server honouring the conditions passes: what fails is the conditions.
func TestProbeLaxS3(t *testing.T) {
	for _, honour := range []bool{false, true} {
		srv := s3lax.Start(t, s3lax.Options{HonourConditions: honour})
		srv.SetEnv(t)
		st, err := store.NewS3(context.Background(), store.S3Config{Bucket: srv.Bucket, Prefix: "p", Endpoint: srv.Endpoint, Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if !honour {
			want = []string{storeprobe.CheckIfAbsent, storeprobe.CheckIfMatchRefuses}
		}
		mustRun(t, st, want...)
		if left := srv.Snapshot(); len(left) != 0 {
			t.Errorf("honour=%v: objects left on the server: %v", honour, left)
		}
		methods, cond := srv.Requests()
		t.Logf("honour=%v: requests %v, %d conditional", honour, methods, cond)
		if cond == 0 {
			t.Errorf("honour=%v: no request carried a conditional header", honour)
		}
	}
}

// A proxy in front of versitygw that drops If-None-Match and If-Match:
// one that only drops them breaks SigV4 (both headers are signed) and
// every guarded write is refused loudly as bad credentials; one that signs
// again, as a gateway with its own credentials does, turns guarded writes
// into plain ones silently, and the probe catches it.
func TestProbeThroughStrippingProxy(t *testing.T) {
	srv := s3server.Start(t)
	creds := aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	open := func(endpoint string) store.Store {
		st, err := store.NewS3(context.Background(), store.S3Config{Bucket: srv.Bucket, Prefix: "probe", Endpoint: endpoint, Region: srv.Region})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	direct := open(srv.Endpoint)
	mustRun(t, direct)

	resign := s3lax.StartStripProxy(t, s3lax.ProxyOptions{Target: srv.Endpoint, Resign: true, Credentials: creds, Region: srv.Region})
	mustRun(t, open(resign.URL), storeprobe.CheckIfAbsent, storeprobe.CheckIfMatchRefuses)
	if resign.Stripped.Load() == 0 {
		t.Fatal("the proxy dropped no header")
	}

	naive := s3lax.StartStripProxy(t, s3lax.ProxyOptions{Target: srv.Endpoint})
	// Under the retry layer, as the command runs it: the gateway may answer
	// the refused signature before it reads the body and close the
	// connection, so now and then the proxy passes on a 403 whose body was
	// cut (no error code: transient), and the next attempt reads the code.
	_, err := storeprobe.Run(context.Background(), store.WithRetry(open(naive.URL), store.DefaultRetryPolicy()), storeprobe.Options{KeepsSHA256: true})
	if !errors.Is(err, store.ErrCredentials) {
		t.Fatalf("through a proxy that drops signed headers: %v, want a refused signature (credentials)", err)
	}
	t.Logf("dropping signed headers: %v", err)
	// Nothing was left behind by the refused probe.
	left, err := direct.List(context.Background(), "tasks/")
	if err != nil || len(left) != 0 {
		t.Fatalf("left under tasks/: %v (%v)", left, err)
	}
}

// A probe that cannot ask (access denied) is an error, not a result, and
// still removes its scratch key.
func TestProbeErrorCleansUp(t *testing.T) {
	mem := store.NewMem("x")
	f := faultstore.New(mem).FailNth(store.VerbPut, 3, "tasks/", store.Permanent(store.ErrAccessDenied))
	res, err := storeprobe.Run(context.Background(), f, storeprobe.Options{})
	if !errors.Is(err, store.ErrAccessDenied) || res != nil {
		t.Fatalf("probe with access denied on its 3rd PUT: %v, %v", res, err)
	}
	left, _ := mem.List(context.Background(), "")
	if len(left) != 0 {
		t.Fatalf("left %v", left)
	}
	// Cancelled: the cleanup still runs with a context of its own.
	ctx, cancel := context.WithCancel(context.Background())
	f = faultstore.New(mem)
	f.Add(faultstore.Rule{Verb: store.VerbHead, Nth: 1, Kind: faultstore.FailCall, Err: context.Canceled})
	cancel()
	_ = ctx
	if _, err := storeprobe.Run(context.Background(), f, storeprobe.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("probe cancelled at its first HEAD: %v", err)
	}
	if left, _ := mem.List(context.Background(), ""); len(left) != 0 {
		t.Fatalf("left %v after a cancelled probe", left)
	}
}

func opts(st store.Store, now time.Time) storeprobe.EnsureOptions {
	return storeprobe.EnsureOptions{Target: storeprobe.TargetOf(st), Build: "nereusctl test", MaxAge: storeprobe.DefaultMaxAge, Now: func() time.Time { return now }}
}

// Ensure probes once and then trusts the stored result until it is older
// than the max age, for another store or endpoint, lacks a check, or does
// not decode; each time it replaces it.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem("ensure")
	c := store.NewCounter(mem)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	out, err := storeprobe.Ensure(ctx, c, opts(c, now))
	if err != nil || !out.Probed || !out.Recorded || !out.Doc.OK || out.Reason != "no probe result is stored" {
		t.Fatalf("first Ensure: %+v, %v", out, err)
	}
	doc, _, err := layout.LoadStoreProbe(ctx, mem)
	if err != nil || doc.ProbedMs != now.UnixMilli() || doc.Store != "mem://ensure" || doc.Build != "nereusctl test" {
		t.Fatalf("stored result: %+v, %v", doc, err)
	}
	before := c.Counts()
	out, err = storeprobe.Ensure(ctx, c, opts(c, now.Add(storeprobe.DefaultMaxAge-time.Minute)))
	if err != nil || out.Probed {
		t.Fatalf("Ensure within the max age: %+v, %v", out, err)
	}
	after := c.Counts()
	for _, v := range store.Verbs {
		want := int64(0)
		if v == store.VerbGet {
			want = 1
		}
		if after[v]-before[v] != want {
			t.Fatalf("a fresh stored result cost %s then %s, want one GET more", before, after)
		}
	}

	later := now.Add(storeprobe.DefaultMaxAge + time.Minute)
	out, err = storeprobe.Ensure(ctx, c, opts(c, later))
	if err != nil || !out.Probed || !out.Recorded || !strings.Contains(out.Reason, "older than") {
		t.Fatalf("Ensure past the max age: %+v, %v", out, err)
	}
	if doc, _, _ := layout.LoadStoreProbe(ctx, mem); doc.ProbedMs != later.UnixMilli() {
		t.Fatalf("the stale result was not replaced: %+v", doc)
	}

	o := opts(c, later)
	o.Target.Endpoint = "http://elsewhere:9000"
	if out, err = storeprobe.Ensure(ctx, c, o); err != nil || !out.Probed || !strings.Contains(out.Reason, "endpoint") {
		t.Fatalf("Ensure through another endpoint: %+v, %v", out, err)
	}
	o.Target.Store = "mem://other"
	if out, err = storeprobe.Ensure(ctx, c, o); err != nil || !out.Probed || !strings.Contains(out.Reason, "is for") {
		t.Fatalf("Ensure of another store's result: %+v, %v", out, err)
	}
	if out, err = storeprobe.Ensure(ctx, c, opts(c, later)); err != nil || !out.Probed || !strings.Contains(out.Reason, "is for mem://other") {
		t.Fatalf("Ensure back on this store: %+v, %v", out, err)
	}
	if out, err = storeprobe.Ensure(ctx, c, opts(c, later.Add(-time.Hour))); err != nil || !out.Probed || !strings.Contains(out.Reason, "in the future") {
		t.Fatalf("Ensure of a result dated in the future: %+v, %v", out, err)
	}

	// --probe-max-age 0s trusts no stored result.
	o = opts(c, later)
	o.MaxAge = 0
	if out, err = storeprobe.Ensure(ctx, c, o); err != nil || !out.Probed {
		t.Fatalf("Ensure with max age 0: %+v, %v", out, err)
	}

	// An older build's result without one of today's checks.
	doc, etag, _ := layout.LoadStoreProbe(ctx, mem)
	doc.Checks = doc.Checks[1:]
	if _, err := layout.Replace(ctx, mem, layout.StoreProbeKey, doc, etag); err != nil {
		t.Fatal(err)
	}
	if out, err = storeprobe.Ensure(ctx, c, opts(c, later)); err != nil || !out.Probed || !strings.Contains(out.Reason, "has no check "+storeprobe.CheckCreate) {
		t.Fatalf("Ensure of a result lacking a check: %+v, %v", out, err)
	}

	// A stored result that does not decode is probed again and replaced.
	for _, bad := range [][]byte{[]byte("{not json"), append(layout.Encode(doc)[:20:20], '}'), make([]byte, layout.MaxStoreProbeBytes+1)} {
		if _, err := mem.Put(ctx, layout.StoreProbeKey, bad, store.None()); err != nil {
			t.Fatal(err)
		}
		if out, err = storeprobe.Ensure(ctx, c, opts(c, later)); err != nil || !out.Probed || !out.Recorded || !strings.Contains(out.Reason, "does not decode") {
			t.Fatalf("Ensure over %d undecodable bytes: %+v, %v", len(bad), out, err)
		}
		if _, _, err := layout.LoadStoreProbe(ctx, mem); err != nil {
			t.Fatalf("not replaced: %v", err)
		}
	}
}

// On the lax S3 endpoint Ensure records a failed result, and Refusal
// names each broken guarantee; a fresh failed result is not probed again
// (the operator reruns store probe once the store is fixed).
func TestEnsureRefusesLaxS3(t *testing.T) {
	ctx := context.Background()
	srv := s3lax.Start(t, s3lax.Options{})
	srv.SetEnv(t)
	st, err := store.NewS3(ctx, store.S3Config{Bucket: srv.Bucket, Prefix: "p", Endpoint: srv.Endpoint, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !storeprobe.Needed(st) || storeprobe.Needed(store.NewMem("")) {
		t.Fatal("Needed: want true for s3://, false for mem://")
	}
	now := time.Now()
	o := storeprobe.EnsureOptions{Target: storeprobe.TargetOf(st), Build: "nereusctl test", MaxAge: time.Hour, Now: func() time.Time { return now }, Probe: storeprobe.Options{KeepsSHA256: true}}
	if o.Target.Store != "s3://lax/p" || o.Target.Endpoint != srv.Endpoint {
		t.Fatalf("target %+v", o.Target)
	}
	out, err := storeprobe.Ensure(ctx, st, o)
	if err != nil || !out.Probed || out.Doc.OK {
		t.Fatalf("Ensure: %+v, %v", out, err)
	}
	refusal := storeprobe.Refusal(out.Doc)
	var ue *storeprobe.UnprovedError
	if !errors.As(refusal, &ue) || !errors.Is(refusal, storeprobe.ErrUnproved) || errkind.Of(refusal) != errkind.Corrupt || errkind.HintOf(refusal) == "" {
		t.Fatalf("refusal %v", refusal)
	}
	for _, name := range []string{storeprobe.CheckIfAbsent, storeprobe.CheckIfMatchRefuses} {
		if !strings.Contains(refusal.Error(), name+": ") || !strings.Contains(storeprobe.Warning(out.Doc), name) {
			t.Errorf("the refusal or the warning does not name %s:\n%v\n%s", name, refusal, storeprobe.Warning(out.Doc))
		}
	}
	if strings.Contains(refusal.Error(), storeprobe.CheckCreate) {
		t.Errorf("the refusal names a check that held: %v", refusal)
	}
	snap := srv.Snapshot()
	if len(snap) != 1 || snap["p/"+layout.StoreProbeKey] == nil {
		t.Fatalf("objects after Ensure: %v, want the probe result only", keys(snap))
	}
	out, err = storeprobe.Ensure(ctx, st, o)
	if err != nil || out.Probed || out.Doc.OK || storeprobe.Refusal(out.Doc) == nil {
		t.Fatalf("second Ensure: %+v, %v", out, err)
	}
	if storeprobe.Refusal(&layout.StoreProbe{OK: true}) != nil || storeprobe.Warning(&layout.StoreProbe{OK: true}) != "" {
		t.Fatal("a passed result is refused or warned about")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A result recorded by another run between our read and our write stands:
// Record reports it was not written, without an error, and leaves it.
func TestRecordLosesToAConcurrentRun(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMem("record")
	now := time.Now()
	res := mustRun(t, mem)
	ours := storeprobe.Document(res, opts(mem, now))
	theirs := storeprobe.Document(res, opts(mem, now.Add(time.Second)))
	if _, err := layout.Create(ctx, mem, layout.StoreProbeKey, theirs); err != nil {
		t.Fatal(err)
	}
	for _, etag := range []string{"", store.ETagOf([]byte("what we read before"))} {
		recorded, err := storeprobe.Record(ctx, mem, ours, etag)
		if etag == "" {
			// no stored result read: IfAbsent meets theirs, then
			// If-Match on its ETag replaces it (a result too large to
			// read is the case this serves)
			if err != nil || !recorded {
				t.Fatalf("Record over an unread result: %v, %v", recorded, err)
			}
			if _, err := layout.Replace(ctx, mem, layout.StoreProbeKey, theirs, store.ETagOf(layout.Encode(ours))); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || recorded {
			t.Fatalf("Record on a stale ETag: recorded %v, %v", recorded, err)
		}
	}
	got, _, err := layout.LoadStoreProbe(ctx, mem)
	if err != nil || got.ProbedMs != theirs.ProbedMs {
		t.Fatalf("stored %+v, %v: want theirs", got, err)
	}
}
