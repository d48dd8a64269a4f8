package verify_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/verify"
)

const (
	day   = 24 * time.Hour
	dayMs = int64(day / time.Millisecond)
)

// t0 is the clock of the first proofs in these tests.
var t0 = time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC).UnixMilli()

// rot models bytes changed at rest on S3: GETs of key return the bytes
// with one byte flipped, while HEAD and LIST still show the size and the
// ETag recorded at upload. It counts the whole-object reads of every key.
type rot struct {
	store.Store
	key   string
	mu    sync.Mutex
	reads map[string]int
}

func newRot(st store.Store) *rot { return &rot{Store: st, reads: map[string]int{}} }

func (r *rot) Get(ctx context.Context, key string, rg *store.Range) ([]byte, error) {
	data, err := r.Store.Get(ctx, key, rg)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if !strings.HasSuffix(key, ".json") {
		r.reads[key]++
	}
	damaged := key == r.key
	r.mu.Unlock()
	if damaged && len(data) > 40 {
		data = bytes.Clone(data)
		data[40] ^= 0x01
	}
	return data, nil
}

func (r *rot) objectReads() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.reads))
	for k, n := range r.reads {
		out[k] = n
	}
	for k := range r.reads {
		delete(r.reads, k)
	}
	return out
}

func deepRun(t *testing.T, st store.Store, tp layout.TopicPartition, o verify.Options) *verify.Report {
	t.Helper()
	o.Deep, o.ReadOnly, o.WriteLedger, o.Build = true, true, true, "test-build"
	if o.NowMs == 0 {
		o.NowMs = t0
	}
	r := verify.Named(context.Background(), st, tp, o)
	if r.Err() != nil {
		t.Fatalf("verify %s: %v", tp, r.Err())
	}
	return r
}

func ledger(t *testing.T, st store.Store, sid string) *layout.ProofLedger {
	t.Helper()
	l, _, err := layout.LoadProofLedger(context.Background(), st, sid)
	if err != nil || l == nil {
		t.Fatalf("ledger of %s: %v %v", sid, l, err)
	}
	return l
}

// TestLedgerAfterFullAndIncrementalRuns: a full deep run proves every
// immutable object of the partition in its ledger (key, size, SHA-256,
// time, build); an incremental run right after reads none of them; after
// a new checkpoint it reads that checkpoint alone.
func TestLedgerAfterFullAndIncrementalRuns(t *testing.T) {
	ctx := context.Background()
	mem := newDemoStore(t)
	st := newRot(mem)
	b := loadB(t, st, ordersTP)
	r := deepRun(t, st, ordersTP, verify.Options{})
	if len(r.Findings) != 0 || r.Proof == nil || !r.Proof.Written {
		t.Fatalf("full run: findings %+v, proof %+v", r.Findings, r.Proof)
	}
	reads := st.objectReads()
	l := ledger(t, mem, b.StreamID)
	if len(l.Proofs) != r.Proof.Objects || r.Proof.Hashed != r.Proof.Objects || r.Proof.Unproved != 0 {
		t.Fatalf("ledger holds %d proofs, the partition %d objects, %d hashed, %d unproved", len(l.Proofs), r.Proof.Objects, r.Proof.Hashed, r.Proof.Unproved)
	}
	for _, p := range l.Proofs {
		if reads[p.Key] == 0 && !strings.Contains(p.Key, "/objects/") {
			t.Errorf("%s is in the ledger but was never read", p.Key)
		}
		if p.ProvedMs != t0 || p.Build != "test-build" || p.Size <= 0 {
			t.Errorf("proof %+v: want proved at t0 by test-build", p)
		}
	}
	for _, ck := range []string{"/checkpoints/", "/objects/"} {
		n := 0
		for _, p := range l.Proofs {
			if strings.Contains(p.Key, ck) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no %s object proved", ck)
		}
	}

	r = deepRun(t, st, ordersTP, verify.Options{Incremental: true, NowMs: t0 + dayMs, ReverifyAfter: verify.DefaultReverifyAfter})
	if r.Proof.Hashed != 0 || r.Proof.Fresh != r.Proof.Objects || r.BytesHashed != 0 {
		t.Fatalf("incremental right after: %d hashed, %d fresh of %d, %d bytes hashed", r.Proof.Hashed, r.Proof.Fresh, r.Proof.Objects, r.BytesHashed)
	}
	if n := len(st.objectReads()); n != 0 {
		t.Fatalf("incremental right after read %d objects whole", n)
	}

	// A new checkpoint: the next incremental run reads it and only it.
	cr, err := recovery.Create(ctx, mem, loadB(t, mem, ordersTP), "", false)
	if err != nil {
		t.Fatal(err)
	}
	_ = cr
	r = deepRun(t, st, ordersTP, verify.Options{Incremental: true, NowMs: t0 + 2*dayMs, ReverifyAfter: verify.DefaultReverifyAfter})
	got := st.objectReads()
	var ckReads []string
	for k := range got {
		if strings.Contains(k, "/checkpoints/") {
			ckReads = append(ckReads, k)
		}
	}
	if r.Proof.Hashed != 1 || len(ckReads) != 1 || len(r.Findings) != 0 {
		t.Fatalf("after a new checkpoint: %d hashed, checkpoints read %v, findings %+v", r.Proof.Hashed, ckReads, r.Findings)
	}
	if p, ok := ledger(t, mem, b.StreamID).Index()[ckReads[0]]; !ok || p.ProvedMs != t0+2*dayMs {
		t.Fatalf("the new checkpoint's proof: %+v %v", p, ok)
	}
}

// TestDamagedProvedObjectCaughtWhenDue: a proved COMMITTED object whose
// bytes change at rest (the listing still shows the recorded ETag, as S3
// does) is not read while its proof is fresh, and is caught, its proof
// voided, once the reverification is due.
func TestDamagedProvedObjectCaughtWhenDue(t *testing.T) {
	mem := newDemoStore(t)
	st := newRot(mem)
	b := loadB(t, st, ordersTP)
	deepRun(t, st, ordersTP, verify.Options{})
	st.key = committedTargets(t, mem, b)[2]
	st.objectReads()
	// Fresh: the default level's checks trust the listing, nothing read.
	r := deepRun(t, st, ordersTP, verify.Options{Incremental: true, NowMs: t0 + 10*dayMs, ReverifyAfter: 30 * day})
	if len(r.Findings) != 0 || st.objectReads()[st.key] != 0 {
		t.Fatalf("fresh proof: findings %+v (the damage is invisible without reading)", r.Findings)
	}
	// Due: read, caught, and the proof is gone from the ledger.
	r = deepRun(t, st, ordersTP, verify.Options{Incremental: true, NowMs: t0 + 31*dayMs, ReverifyAfter: 30 * day})
	found := false
	for _, f := range r.Findings {
		if f.Object == st.key && f.Check == verify.CheckSHA256 {
			found = true
		}
	}
	if !found {
		t.Fatalf("due: the damaged object was not caught: %+v", r.Findings)
	}
	if _, ok := ledger(t, mem, b.StreamID).Index()[st.key]; ok {
		t.Fatal("the damaged object keeps its proof")
	}
	if r.Proof.Unproved == 0 {
		t.Fatal("the damaged object is not counted unproved")
	}
}

// TestBudgetResumesToFullCoverage: runs bounded by --max-bytes stop at an
// object boundary, say what is left and how many runs remain, and resume
// to full coverage with every object hashed exactly once across the
// runs, in ceil(total/budget) runs or one more.
func TestBudgetResumesToFullCoverage(t *testing.T) {
	mem := newDemoStore(t)
	st := newRot(mem)
	tps := []layout.TopicPartition{ordersTP, offsetsTP, {Topic: "payments", Partition: 0}}
	var total int64
	for _, tp := range tps {
		r := verify.Named(context.Background(), mem, tp, verify.Options{Plan: true, Deep: true, Incremental: true, NowMs: t0})
		total += r.Proof.Bytes
	}
	const budget = 40 << 10
	reads := map[string]int{}
	runs := 0
	for ; runs < 50; runs++ {
		bud := &verify.Budget{MaxBytes: budget}
		left, hashed := 0, int64(0)
		for _, tp := range tps {
			r := deepRun(t, st, tp, verify.Options{Incremental: true, Budget: bud, NowMs: t0 + int64(runs)*1000, ReverifyAfter: 30 * day})
			if len(r.Findings) != 0 {
				t.Fatalf("run %d %s: %+v", runs, tp, r.Findings)
			}
			left += r.Proof.Left
			hashed += r.Proof.HashedBytes
		}
		if _, used := bud.Used(); used > budget && hashed > 0 && runs > 0 {
			t.Fatalf("run %d read %d bytes over a budget of %d", runs, used, budget)
		}
		for k, n := range st.objectReads() {
			reads[k] += n
		}
		if left == 0 {
			runs++
			break
		}
		if !bud.Spent() {
			t.Fatalf("run %d left %d objects without spending its budget", runs, left)
		}
	}
	// Every object was read to prove it exactly once, each checkpoint
	// too; the object a checkpoint is anchored at is read once more when
	// that checkpoint is verified (recovery checks the anchor's SHA-256).
	anchors := map[string]bool{}
	for k := range reads {
		if a, _, err := layout.ParseCheckpointKey(k); err == nil && strings.Contains(k, "/checkpoints/") {
			sid := strings.Split(k, "/")[1]
			anchors[sid+"@"+strconv.FormatInt(a, 10)] = true
		}
	}
	for k, n := range reads {
		want := 1
		if _, end, err := layout.ParseObjectKey(k); err == nil && anchors[strings.Split(k, "/")[1]+"@"+strconv.FormatInt(end, 10)] {
			want = 2
		}
		if n != want {
			t.Errorf("%s read %d times across the runs, want %d", k, n, want)
		}
	}
	want := int((total + budget - 1) / budget)
	if runs < want-1 || runs > want+1 {
		t.Fatalf("%d runs to full coverage of %d bytes at %d a run, want %d ± 1", runs, total, budget, want)
	}
	t.Logf("%d bytes in %d runs at %d bytes a run", total, runs, budget)
	// Full coverage: an incremental run reads nothing.
	for _, tp := range tps {
		if r := deepRun(t, st, tp, verify.Options{Incremental: true, NowMs: t0 + 100000, ReverifyAfter: 30 * day}); r.Proof.Hashed != 0 || r.Proof.Unproved != 0 {
			t.Fatalf("%s after full coverage: %d hashed, %d unproved", tp, r.Proof.Hashed, r.Proof.Unproved)
		}
	}
}

// TestFreshnessVerdict: --max-age reads no object bytes, and has a
// proof:stale finding exactly when some object has no proof within it.
func TestFreshnessVerdict(t *testing.T) {
	mem := newDemoStore(t)
	st := newRot(mem)
	fresh := func(now int64, maxAge time.Duration) *verify.Report {
		r := verify.Named(context.Background(), st, ordersTP, verify.Options{MaxAge: maxAge, NowMs: now})
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if n := st.objectReads(); len(n) != 0 {
			t.Fatalf("a freshness verdict read objects: %v", n)
		}
		return r
	}
	stale := func(r *verify.Report) *verify.Finding {
		for _, f := range r.Findings {
			if f.Check == verify.CheckProofStale {
				return &f
			}
		}
		return nil
	}
	r := fresh(t0, 7*day)
	if f := stale(r); f == nil || r.Proof.NeverProved != r.Proof.Objects || r.Proof.UnprovedBytes != r.Proof.Bytes {
		t.Fatalf("never proved: %+v %+v", f, r.Proof)
	}
	deepRun(t, st, ordersTP, verify.Options{})
	st.objectReads()
	if r := fresh(t0+6*dayMs, 7*day); stale(r) != nil || r.Proof.OldestProofAgeSeconds != 6*24*3600 {
		t.Fatalf("6 days after a full proof, 7d: %+v %+v", r.Findings, r.Proof)
	}
	r = fresh(t0+8*dayMs, 7*day)
	if f := stale(r); f == nil || r.Proof.Unproved != r.Proof.Objects || f.Object != layout.ProofKey(loadB(t, mem, ordersTP).StreamID) {
		t.Fatalf("8 days after a full proof, 7d: %+v %+v", r.Findings, r.Proof)
	}
}

// TestDamagedLedgerRebuilt: a ledger with one bit flipped is a
// proof:ledger finding, proves nothing (every object is read again) and
// is rebuilt by the run.
func TestDamagedLedgerRebuilt(t *testing.T) {
	ctx := context.Background()
	mem := newDemoStore(t)
	st := newRot(mem)
	b := loadB(t, st, ordersTP)
	first := deepRun(t, st, ordersTP, verify.Options{})
	st.objectReads()
	key := layout.ProofKey(b.StreamID)
	data, err := mem.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One bit of a proof's time: still well-formed JSON, still a valid
	// value; only the digest can tell.
	i := bytes.Index(data, []byte(`"proved_ms": `)) + len(`"proved_ms": `) + 3
	data[i] ^= 0x01
	put(t, mem, key, data)
	r := deepRun(t, st, ordersTP, verify.Options{Incremental: true, NowMs: t0 + dayMs, ReverifyAfter: 30 * day})
	var lf *verify.Finding
	for _, f := range r.Findings {
		if f.Check == verify.CheckProofLedger {
			lf = &f
		}
	}
	if lf == nil || lf.Object != key || !strings.Contains(lf.Detail, "digest") {
		t.Fatalf("damaged ledger: findings %+v", r.Findings)
	}
	if r.Proof.Hashed != first.Proof.Objects || r.Proof.Fresh != 0 {
		t.Fatalf("the damaged ledger was trusted: %d hashed, %d fresh of %d", r.Proof.Hashed, r.Proof.Fresh, first.Proof.Objects)
	}
	l := ledger(t, mem, b.StreamID)
	if len(l.Proofs) != first.Proof.Objects || !r.Proof.Written {
		t.Fatalf("rebuilt ledger: %d proofs, want %d", len(l.Proofs), first.Proof.Objects)
	}
	if r := deepRun(t, st, ordersTP, verify.Options{Incremental: true, NowMs: t0 + 2*dayMs, ReverifyAfter: 30 * day}); len(r.Findings) != 0 || r.Proof.Hashed != 0 {
		t.Fatalf("after the rebuild: %+v, %d hashed", r.Findings, r.Proof.Hashed)
	}
}

// TestReadOnlyAndPlanWriteNoLedger: --read-only and --plan never write
// a ledger.
func TestReadOnlyAndPlanWriteNoLedger(t *testing.T) {
	ctx := context.Background()
	mem := newDemoStore(t)
	b := loadB(t, mem, ordersTP)
	for _, o := range []verify.Options{{Deep: true, ReadOnly: true, NowMs: t0}, {Deep: true, Plan: true, WriteLedger: true, NowMs: t0}} {
		r := verify.Named(ctx, mem, ordersTP, o)
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if _, err := mem.Head(ctx, layout.ProofKey(b.StreamID)); err == nil {
			t.Fatalf("%+v wrote a ledger", o)
		}
	}
}
