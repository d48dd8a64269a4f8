package layout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ProofLedger is a stream's proof ledger (streams/<sid>/proof.json,
// ProofKey): for each immutable object verify --deep read and found
// clean (COMMITTED objects, NTC2 members, checkpoints), its key, size and
// SHA-256, when and by which build (docs/layout.md, "Proof ledger"). It is
// a record of work done, never an authority over data: an entry whose
// size or SHA-256 is not what the object's manifest records proves
// nothing, and a ledger that does not decode is rebuilt, never trusted.
// Written with If-Match on the ETag read (IfAbsent when there is none)
// after each partition of a deep run.
type ProofLedger struct {
	StreamID  string `json:"stream_id"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// UpdatedMs is when it was last written.
	UpdatedMs int64 `json:"updated_ms"`
	// Proofs are sorted by key, one per key.
	Proofs []Proof `json:"proofs"`
}

// Proof is one object proved by reading every byte.
type Proof struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// ProvedMs is when the bytes were read and found clean.
	ProvedMs int64 `json:"proved_ms"`
	// Build is the nereusctl version that proved them.
	Build string `json:"build"`
}

func (ProofLedger) carriesDigest() {}

// MaxProofLedgerBytes caps a proof ledger: about 300 bytes an entry, so a
// stream of 200,000 objects fits.
const MaxProofLedgerBytes = 64 << 20

// maxBuild bounds a recorded build.
const maxBuild = 256

// Validate lets ProofLedger be decoded with Decode.
func (l *ProofLedger) Validate() error {
	if err := validateStreamID(l.StreamID); err != nil {
		return err
	}
	if err := kafka.ValidateTopic(l.Topic); err != nil {
		return err
	}
	if l.Partition < 0 {
		return fmt.Errorf("partition %d: want >= 0", l.Partition)
	}
	if l.UpdatedMs <= 0 {
		return fmt.Errorf("updated_ms %d: want > 0", l.UpdatedMs)
	}
	prefix := StreamPrefix(l.StreamID)
	for i, p := range l.Proofs {
		if err := store.ValidateKey(p.Key); err != nil {
			return fmt.Errorf("proof %d: %w", i, err)
		}
		rest, ok := strings.CutPrefix(p.Key, prefix)
		if !ok || !(strings.HasPrefix(rest, "objects/") || strings.HasPrefix(rest, "checkpoints/") || strings.HasPrefix(rest, "compacted/")) {
			return fmt.Errorf("proof %d: key %q is no immutable object of stream %s (objects/, checkpoints/, compacted/)", i, p.Key, l.StreamID)
		}
		if i > 0 && p.Key <= l.Proofs[i-1].Key {
			return fmt.Errorf("proof %d (%s): keys must be sorted, each once", i, p.Key)
		}
		if p.Size < 0 {
			return fmt.Errorf("proof %d (%s): size %d is negative", i, p.Key, p.Size)
		}
		if err := validateSHA256(p.SHA256); err != nil {
			return fmt.Errorf("proof %d (%s) sha256: %w", i, p.Key, err)
		}
		if p.ProvedMs <= 0 || p.ProvedMs > l.UpdatedMs {
			return fmt.Errorf("proof %d (%s): proved_ms %d: want > 0 and not after updated_ms %d", i, p.Key, p.ProvedMs, l.UpdatedMs)
		}
		if p.Build == "" || len(p.Build) > maxBuild {
			return fmt.Errorf("proof %d (%s): build: want 1..%d bytes", i, p.Key, maxBuild)
		}
		for _, r := range p.Build {
			if r < 0x20 || r > 0x7e {
				return fmt.Errorf("proof %d (%s): build %q: only printable ASCII", i, p.Key, p.Build)
			}
		}
	}
	return nil
}

// Index returns the ledger's proofs by key.
func (l *ProofLedger) Index() map[string]Proof {
	m := make(map[string]Proof, len(l.Proofs))
	for _, p := range l.Proofs {
		m[p.Key] = p
	}
	return m
}

// DecodeProofLedger decodes a stored ledger strictly (Decode) and checks it
// is stream sid's.
func DecodeProofLedger(sid string, data []byte) (*ProofLedger, error) {
	key := ProofKey(sid)
	if len(data) > MaxProofLedgerBytes {
		return nil, corrupt(key, "%d bytes, at most %d", len(data), MaxProofLedgerBytes)
	}
	var l ProofLedger
	if err := Decode(key, data, &l); err != nil {
		if errors.Is(err, ErrLegacyDocument) {
			// Every ledger was written with its digest: one without is
			// damaged, not old.
			return nil, corrupt(key, "no digest")
		}
		return nil, err
	}
	if l.StreamID != sid {
		return nil, corrupt(key, "names stream %s", l.StreamID)
	}
	return &l, nil
}

// LoadProofLedger reads stream sid's proof ledger. A missing ledger is
// (nil, "", nil): nothing proved yet. A ledger that does not decode is
// returned as an ErrCorruptDocument error with the ETag of its bytes, so
// that its rebuild replaces exactly those bytes.
func LoadProofLedger(ctx context.Context, st store.Store, sid string) (*ProofLedger, string, error) {
	key := ProofKey(sid)
	data, err := store.GetCapped(ctx, st, key, MaxProofLedgerBytes)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", nil
	}
	if errors.Is(err, store.ErrTooLarge) {
		// Its ETag is unknown without reading it all: HEAD gives it.
		info, herr := st.Head(ctx, key)
		if herr != nil {
			return nil, "", herr
		}
		return nil, info.ETag, fmt.Errorf("%s: %w: %w", key, ErrCorruptDocument, err)
	}
	if err != nil {
		return nil, "", err
	}
	etag := store.ETagOf(data)
	l, err := DecodeProofLedger(sid, data)
	if err != nil {
		return nil, etag, err
	}
	return l, etag, nil
}

// ProofUpdate is what a run changes in a ledger: the proofs it made, the
// keys whose proof it voids (damaged, collected), and, when Live is set,
// the only keys the ledger keeps (the stream's immutable objects now; an
// entry of any other key is dropped).
type ProofUpdate struct {
	Add  []Proof
	Drop []string
	Live map[string]bool
}

// Empty reports whether the update changes nothing.
func (u ProofUpdate) Empty() bool { return len(u.Add) == 0 && len(u.Drop) == 0 && u.Live == nil }

// apply returns l (nil: empty) with u applied, for stream sid at nowMs.
func (u ProofUpdate) apply(l *ProofLedger, tp TopicPartition, sid string, nowMs int64) *ProofLedger {
	m := map[string]Proof{}
	if l != nil {
		m = l.Index()
	}
	for _, k := range u.Drop {
		delete(m, k)
	}
	for _, p := range u.Add {
		if old, ok := m[p.Key]; !ok || old.ProvedMs <= p.ProvedMs {
			m[p.Key] = p
		}
	}
	out := &ProofLedger{StreamID: sid, Topic: tp.Topic, Partition: tp.Partition, UpdatedMs: nowMs, Proofs: make([]Proof, 0, len(m))}
	for k, p := range m {
		if u.Live != nil && !u.Live[k] {
			continue
		}
		p.ProvedMs = min(p.ProvedMs, nowMs)
		out.Proofs = append(out.Proofs, p)
	}
	sort.Slice(out.Proofs, func(i, j int) bool { return out.Proofs[i].Key < out.Proofs[j].Key })
	if l != nil {
		out.UpdatedMs = max(nowMs, l.UpdatedMs)
	}
	return out
}

// SaveProofLedger applies u to stream sid's ledger with a CAS: If-Match on
// etag (the ETag the caller read; "" when there was none: IfAbsent),
// re-reading and applying u again on a lost precondition (another run
// wrote meanwhile), a few times. A ledger that does not decode when
// re-read is replaced whole (its bytes are never trusted). Applying the
// same update twice gives the same ledger, so a rerun converges. It
// returns the ledger written and its size.
func SaveProofLedger(ctx context.Context, st store.Store, tp TopicPartition, sid string, cur *ProofLedger, etag string, u ProofUpdate, nowMs int64) (*ProofLedger, int64, error) {
	key := ProofKey(sid)
	for attempt := 0; attempt < 5; attempt++ {
		next := u.apply(cur, tp, sid, nowMs)
		var err error
		if etag == "" {
			_, err = Create(ctx, st, key, next)
		} else {
			_, err = Replace(ctx, st, key, next, etag)
		}
		if err == nil {
			return next, int64(len(Encode(next))), nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, 0, fmt.Errorf("write proof ledger %s: %w", key, err)
		}
		cur, etag, err = LoadProofLedger(ctx, st, sid)
		if err != nil && !IsCorrupt(err) {
			return nil, 0, fmt.Errorf("write proof ledger %s: re-read: %w", key, err)
		}
	}
	return nil, 0, fmt.Errorf("write proof ledger %s: it keeps changing: %w", key, store.ErrPreconditionFailed)
}

// DropProofs removes the entries of keys (objects gc deleted) from stream
// sid's ledger with a CAS; nothing when the ledger has none of them, is
// missing, or does not decode (the next deep run rebuilds it). A rerun
// finds nothing left to drop.
func DropProofs(ctx context.Context, st store.Store, tp TopicPartition, sid string, keys []string, nowMs int64) error {
	if len(keys) == 0 {
		return nil
	}
	cur, etag, err := LoadProofLedger(ctx, st, sid)
	if err != nil {
		if IsCorrupt(err) {
			return nil
		}
		return fmt.Errorf("drop proofs of %s: %w", sid, err)
	}
	if cur == nil {
		return nil
	}
	idx := cur.Index()
	var drop []string
	for _, k := range keys {
		if _, ok := idx[k]; ok {
			drop = append(drop, k)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	_, _, err = SaveProofLedger(ctx, st, tp, sid, cur, etag, ProofUpdate{Drop: drop}, nowMs)
	return err
}
