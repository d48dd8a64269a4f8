package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The proof findings and their scope: a proof ledger that does not decode
// (it is rebuilt, never trusted) and, under a freshness verdict
// (Options.MaxAge), a partition whose immutable objects are not all proved
// within it.
const (
	ScopeProof       = "proof"
	CheckProofLedger = "proof:ledger"
	CheckProofStale  = "proof:stale"
)

// DefaultReverifyAfter is how old a proof may grow before an incremental
// deep run reads the object again (--reverify-after).
const DefaultReverifyAfter = 30 * 24 * time.Hour

// Budget bounds the bytes a deep run reads to prove objects, across all
// its partitions: at most MaxRequests object reads and MaxBytes bytes
// (0: no bound). Once the next object would pass either bound, the run
// is spent: no object is started after that, so it stops at an object
// boundary. The first object of a run is always read, so that an object
// larger than the budget is proved eventually.
type Budget struct {
	MaxRequests int64
	MaxBytes    int64

	mu       sync.Mutex
	requests int64
	bytes    int64
	spent    bool
}

// Bounded reports whether the budget bounds anything.
func (b *Budget) Bounded() bool { return b != nil && (b.MaxRequests > 0 || b.MaxBytes > 0) }

// take reserves one read of size bytes (size < 0: unknown, counted as it is
// read with add); false once the budget is spent.
func (b *Budget) take(size int64) bool {
	if !b.Bounded() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent {
		return false
	}
	size = max(size, 0)
	first := b.requests == 0
	if !first && ((b.MaxRequests > 0 && b.requests+1 > b.MaxRequests) || (b.MaxBytes > 0 && b.bytes+size > b.MaxBytes)) {
		b.spent = true
		return false
	}
	b.requests++
	b.bytes += size
	return true
}

// add counts n more bytes read for an object whose size take did not know.
func (b *Budget) add(n int64) {
	if !b.Bounded() {
		return
	}
	b.mu.Lock()
	b.bytes += n
	b.mu.Unlock()
}

// Spent reports whether the run stopped reading for the budget.
func (b *Budget) Spent() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// Used is what the run read within the budget: object reads and bytes.
func (b *Budget) Used() (requests, bytes int64) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests, b.bytes
}

// RunsToFull estimates the runs at this budget that prove what is left
// (objects, bytes): the larger of the two bounds' counts, 0 when nothing
// is left, 1 when the budget bounds nothing.
func (b *Budget) RunsToFull(objects int, bytes int64) int {
	if objects == 0 && bytes == 0 {
		return 0
	}
	if !b.Bounded() {
		return 1
	}
	runs := int64(1)
	if b.MaxRequests > 0 {
		runs = max(runs, (int64(objects)+b.MaxRequests-1)/b.MaxRequests)
	}
	if b.MaxBytes > 0 {
		runs = max(runs, (bytes+b.MaxBytes-1)/b.MaxBytes)
	}
	return int(runs)
}

// ProofReport is what a partition's proof ledger says and what the run
// did with it (Report.Proof).
type ProofReport struct {
	// Ledger is the ledger's key; LedgerBytes its size (as written, or as
	// read when nothing was written); Written: this run wrote it.
	Ledger      string `json:"ledger"`
	LedgerBytes int64  `json:"ledger_bytes"`
	Written     bool   `json:"written"`
	// Objects and Bytes are the partition's immutable objects (COMMITTED
	// objects above the trim, the open segment's, NTC2 members of the
	// coverage, checkpoints).
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// Hashed (HashedBytes) are the objects this run read and proved,
	// Fresh those an incremental run left alone (proved within
	// --reverify-after), Left those due that the budget left for a later
	// run (LeftBytes).
	Hashed      int   `json:"hashed"`
	HashedBytes int64 `json:"hashed_bytes"`
	Fresh       int   `json:"fresh"`
	Left        int   `json:"left"`
	LeftBytes   int64 `json:"left_bytes"`
	// Unproved (UnprovedBytes) are the objects with no proof within the
	// window (--max-age, else --reverify-after) after this run, never
	// proved ones included (NeverProved).
	WindowSeconds int64 `json:"window_seconds"`
	Unproved      int   `json:"unproved"`
	UnprovedBytes int64 `json:"unproved_bytes"`
	NeverProved   int   `json:"never_proved"`
	// OldestProofMs is the oldest valid proof of the partition's objects
	// (0: none), OldestProofAgeSeconds its age at the run's clock.
	OldestProofMs         int64 `json:"oldest_proof_ms"`
	OldestProofAgeSeconds int64 `json:"oldest_proof_age_seconds"`
}

// immutable is one immutable object of a partition: what its proof must
// say (size; SHA-256 when a manifest records it) and its proof's time.
type immutable struct {
	key    string
	size   int64  // -1: unknown (a listing without sizes)
	sha256 string // "" where no manifest records it (open segment, checkpoints)
	// provedMs is its valid proof's time (0: none).
	provedMs int64
}

// proofState is one partition's ledger during a run.
type proofState struct {
	o      Options
	ledger *layout.ProofLedger
	etag   string
	damage string // why the stored ledger was not trusted ("" when it was)
	index  map[string]layout.Proof
	mu     sync.Mutex
	add    []layout.Proof
	drop   []string
	rep    *ProofReport
}

// loadProofs reads the partition's ledger; a ledger that does not decode
// is a finding and treated as empty (to be rebuilt).
func loadProofs(ctx context.Context, st store.Store, b *layout.Binding, o Options) (*proofState, *Finding, error) {
	ps := &proofState{o: o, rep: &ProofReport{Ledger: layout.ProofKey(b.StreamID)}}
	l, etag, err := layout.LoadProofLedger(ctx, st, b.StreamID)
	ps.etag = etag
	switch {
	case err == nil && l != nil:
		ps.ledger = l
		ps.index = l.Index()
		ps.rep.LedgerBytes = int64(len(layout.Encode(l)))
	case err == nil: // none yet
	case layout.IsCorrupt(err):
		ps.damage = err.Error()
		ps.index = map[string]layout.Proof{}
		return ps, &Finding{Scope: ScopeProof, Gen: -1, Object: layout.ProofKey(b.StreamID), Check: CheckProofLedger,
			Expected: "a proof ledger that decodes", Found: "damaged",
			Detail: err.Error() + "; not trusted: every object is unproved until a --deep run rebuilds it"}, nil
	default:
		return nil, nil, fmt.Errorf("read proof ledger: %w", err)
	}
	if ps.index == nil {
		ps.index = map[string]layout.Proof{}
	}
	return ps, nil, nil
}

// provedAt is the time of key's valid proof (0: none): an entry whose size
// or SHA-256 is not what the object must have proves nothing.
func (ps *proofState) provedAt(key string, size int64, sha string) int64 {
	p, ok := ps.index[key]
	if !ok || (size >= 0 && p.Size != size) || (sha != "" && p.SHA256 != sha) {
		return 0
	}
	return p.ProvedMs
}

// due reports whether an object with a proof at provedMs is read this run.
func (ps *proofState) due(provedMs int64) bool {
	if !ps.o.Incremental || provedMs == 0 {
		return true
	}
	return ps.o.NowMs-provedMs >= ps.o.ReverifyAfter.Milliseconds()
}

// proved records a clean read of key.
func (ps *proofState) proved(key string, data []byte) {
	s := sha256.Sum256(data)
	ps.provedSum(key, int64(len(data)), hex.EncodeToString(s[:]))
}

func (ps *proofState) provedSum(key string, size int64, sha string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.add = append(ps.add, layout.Proof{Key: key, Size: size, SHA256: sha, ProvedMs: ps.o.NowMs, Build: ps.o.Build})
	ps.rep.Hashed++
	ps.rep.HashedBytes += size
}

// failed voids key's proof: its bytes were read and are wrong.
func (ps *proofState) failed(key string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.drop = append(ps.drop, key)
}

// left counts an object the budget left for a later run.
func (ps *proofState) left(size int64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.rep.Left++
	ps.rep.LeftBytes += max(size, 0)
}

// fresh counts an object an incremental run left alone.
func (ps *proofState) fresh() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.rep.Fresh++
}

// gate decides whether an object with a proof at provedMs is read now:
// due, inside the sample and within the budget.
func (ps *proofState) gate(key string, size, provedMs int64, sampled bool) bool {
	if sampled && !ps.o.Sample.Has(key) {
		return false
	}
	if !ps.due(provedMs) {
		ps.fresh()
		return false
	}
	if !ps.o.Budget.take(size) {
		ps.left(size)
		return false
	}
	return true
}

// save writes the ledger with this run's proofs (a CAS; nothing when the
// run changed nothing and the ledger was sound).
func (ps *proofState) save(ctx context.Context, st store.Store, b *layout.Binding, live []immutable) error {
	keep := make(map[string]bool, len(live))
	for _, im := range live {
		keep[im.key] = true
	}
	stale := false
	for k := range ps.index {
		if !keep[k] {
			stale = true
			break
		}
	}
	u := layout.ProofUpdate{Add: ps.add, Drop: ps.drop, Live: keep}
	if len(ps.add) == 0 && len(ps.drop) == 0 && !stale && ps.damage == "" {
		return nil
	}
	if len(ps.add) == 0 && ps.ledger == nil && ps.damage == "" {
		return nil // nothing proved, nothing to keep
	}
	l, n, err := layout.SaveProofLedger(ctx, st, layout.TopicPartition{Topic: b.Topic, Partition: b.Partition}, b.StreamID, ps.ledger, ps.etag, u, ps.o.NowMs)
	if err != nil {
		return err
	}
	ps.ledger, ps.index = l, l.Index()
	ps.rep.LedgerBytes, ps.rep.Written = n, true
	return nil
}

// freshness fills the report's counts over the partition's immutable
// objects, against the proofs held now (the ledger as written), and
// returns the stale finding when a freshness verdict is asked and an
// object has no proof within it.
func (ps *proofState) freshness(b *layout.Binding, live []immutable) *Finding {
	window := ps.o.MaxAge
	if window <= 0 {
		window = ps.o.ReverifyAfter
	}
	if window <= 0 {
		window = DefaultReverifyAfter
	}
	r := ps.rep
	r.WindowSeconds = int64(window / time.Second)
	r.Objects, r.Bytes, r.Unproved, r.UnprovedBytes, r.NeverProved, r.OldestProofMs = 0, 0, 0, 0, 0, 0
	added := make(map[string]layout.Proof, len(ps.add))
	for _, p := range ps.add {
		added[p.Key] = p
	}
	dropped := make(map[string]bool, len(ps.drop))
	for _, k := range ps.drop {
		dropped[k] = true
	}
	for _, im := range live {
		r.Objects++
		at := im.provedMs
		if p, ok := added[im.key]; ok {
			at = p.ProvedMs
			if im.size < 0 {
				im.size = p.Size // the listing gave none; the read did
			}
		} else if dropped[im.key] {
			at = 0
		}
		r.Bytes += max(im.size, 0)
		if at == 0 {
			r.NeverProved++
		}
		if at > 0 && (r.OldestProofMs == 0 || at < r.OldestProofMs) {
			r.OldestProofMs = at
		}
		if at == 0 || ps.o.NowMs-at >= window.Milliseconds() {
			r.Unproved++
			r.UnprovedBytes += max(im.size, 0)
		}
	}
	if r.OldestProofMs > 0 {
		r.OldestProofAgeSeconds = max(ps.o.NowMs-r.OldestProofMs, 0) / 1000
	}
	if ps.o.MaxAge <= 0 || r.Unproved == 0 {
		return nil
	}
	age := "none is proved"
	if r.OldestProofMs > 0 {
		age = "the oldest proof is " + (time.Duration(r.OldestProofAgeSeconds) * time.Second).String() + " old"
	}
	return &Finding{Scope: ScopeProof, Gen: -1, Object: layout.ProofKey(b.StreamID), Check: CheckProofStale,
		Expected: "every immutable object proved within " + ps.o.MaxAge.String(),
		Found:    fmt.Sprintf("%d of %d objects unproved (%d bytes)", r.Unproved, r.Objects, r.UnprovedBytes),
		Detail:   fmt.Sprintf("%d objects (%d bytes) have no proof younger than %s (%d never proved); %s; run 'nereusctl verify --deep --incremental' to prove them", r.Unproved, r.UnprovedBytes, ps.o.MaxAge, r.NeverProved, age)}
}

// sortByProof orders immutable objects oldest proof first (never proved
// first of all), then by key.
func sortByProof[T any](xs []T, at func(T) (int64, string)) {
	sort.SliceStable(xs, func(i, j int) bool {
		a, ka := at(xs[i])
		b, kb := at(xs[j])
		if a != b {
			return a < b
		}
		return ka < kb
	})
}

// capture is a store that keeps the size and SHA-256 of every checkpoint it
// reads whole, so that the checkpoints recovery verifies are proved by the
// bytes it read (one read, not two).
type capture struct {
	store.Store
	prefix string
	mu     sync.Mutex
	sums   map[string]capturedSum
}

type capturedSum struct {
	size   int64
	sha256 string
}

func (c *capture) Get(ctx context.Context, key string, r *store.Range) ([]byte, error) {
	data, err := c.Store.Get(ctx, key, r)
	if err == nil && strings.HasPrefix(key, c.prefix) && (r == nil || r.Offset == 0) {
		s := sha256.Sum256(data)
		c.mu.Lock()
		c.sums[key] = capturedSum{size: int64(len(data)), sha256: hex.EncodeToString(s[:])}
		c.mu.Unlock()
	}
	return data, err
}
