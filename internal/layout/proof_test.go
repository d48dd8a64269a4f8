package layout

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
)

func validLedger() *ProofLedger {
	return &ProofLedger{StreamID: "s-abc", Topic: "orders", Partition: 3, UpdatedMs: 2000, Proofs: []Proof{
		{Key: "streams/s-abc/checkpoints/00000000000000000010-0123456789ab.nkc1", Size: 90, SHA256: strings.Repeat("a", 64), ProvedMs: 1000, Build: "v1.2.3"},
		{Key: "streams/s-abc/objects/00000000000000000000-00000000000000000010.kb", Size: 120, SHA256: strings.Repeat("b", 64), ProvedMs: 2000, Build: "v1.2.3"},
	}}
}

func TestProofLedgerRoundTripAndRefuse(t *testing.T) {
	l := validLedger()
	data := Encode(l)
	got, err := DecodeProofLedger("s-abc", data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Encode(got), data) {
		t.Fatal("ledger does not round-trip")
	}
	if !bytes.Contains(data, []byte(`"digest": "sha256:`)) {
		t.Fatalf("ledger carries no digest:\n%s", data)
	}
	if _, err := DecodeProofLedger("s-other", data); !IsCorrupt(err) {
		t.Fatalf("another stream's ledger: %v, want corrupt", err)
	}
	s := string(data)
	bad := map[string]string{
		"unsorted":      strings.Replace(strings.Replace(s, "checkpoints/00000000000000000010-0123456789ab.nkc1", "zz", 1), "objects/", "objects/", 1),
		"mutable key":   strings.Replace(s, "checkpoints/00000000000000000010-0123456789ab.nkc1", "head.json", 1),
		"foreign key":   strings.Replace(s, "streams/s-abc/checkpoints", "streams/s-xyz/checkpoints", 1),
		"bad sha":       strings.Replace(s, strings.Repeat("a", 64), strings.Repeat("A", 64), 1),
		"future proof":  strings.Replace(s, `"proved_ms": 1000`, `"proved_ms": 3000`, 1),
		"no build":      strings.Replace(s, `"build": "v1.2.3"`, `"build": ""`, 1),
		"unknown field": strings.Replace(s, `"size": 90`, `"sise": 90`, 1),
		"truncated":     s[:len(s)/2],
	}
	for name, doc := range bad {
		_, err := DecodeProofLedger("s-abc", []byte(doc))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !IsCorrupt(err) || !strings.Contains(err.Error(), "streams/s-abc/proof.json") {
			t.Errorf("%s: %v: want a corrupt-document error naming the ledger", name, err)
		}
	}
}

// TestProofLedgerBitFlips: every one-bit flip of a stored ledger is
// refused, or decodes to exactly the same ledger (whitespace): a flip is
// never trusted as another proof.
func TestProofLedgerBitFlips(t *testing.T) {
	data := Encode(validLedger())
	for i := range data {
		for bit := 0; bit < 8; bit++ {
			flipped := bytes.Clone(data)
			flipped[i] ^= 1 << bit
			got, err := DecodeProofLedger("s-abc", flipped)
			if err == nil && !bytes.Equal(Encode(got), data) {
				t.Fatalf("flip of bit %d of byte %d decodes to another ledger:\n%s", bit, i, flipped)
			}
		}
	}
}

func TestSaveProofLedgerCAS(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("proof")
	tp := TopicPartition{Topic: "orders", Partition: 3}
	p := validLedger().Proofs
	// A first write creates it.
	l, _, err := SaveProofLedger(ctx, st, tp, "s-abc", nil, "", ProofUpdate{Add: p[:1]}, 1500)
	if err != nil || len(l.Proofs) != 1 {
		t.Fatalf("create: %v %+v", err, l)
	}
	// A writer holding no ETag (a stale read) meets the first's write: it
	// re-reads and merges, losing nothing.
	l, _, err = SaveProofLedger(ctx, st, tp, "s-abc", nil, "", ProofUpdate{Add: p[1:]}, 2500)
	if err != nil {
		t.Fatal(err)
	}
	got, etag, err := LoadProofLedger(ctx, st, "s-abc")
	if err != nil || len(got.Proofs) != 2 || !bytes.Equal(Encode(got), Encode(l)) {
		t.Fatalf("merged ledger: %v %+v", err, got)
	}
	// The same update again: the same proofs (idempotent).
	again, _, err := SaveProofLedger(ctx, st, tp, "s-abc", got, etag, ProofUpdate{Add: p[1:]}, 2500)
	if err != nil || !bytes.Equal(Encode(again), Encode(got)) {
		t.Fatalf("rerun changed the ledger: %v\n%s\n%s", err, Encode(again), Encode(got))
	}
	// Live drops the entries of collected objects; Drop voids one.
	_, etag, _ = LoadProofLedger(ctx, st, "s-abc")
	if _, _, err := SaveProofLedger(ctx, st, tp, "s-abc", got, etag, ProofUpdate{Live: map[string]bool{p[1].Key: true}}, 2600); err != nil {
		t.Fatal(err)
	}
	got, etag, _ = LoadProofLedger(ctx, st, "s-abc")
	if len(got.Proofs) != 1 || got.Proofs[0].Key != p[1].Key {
		t.Fatalf("live: %+v", got.Proofs)
	}
	// A damaged ledger is replaced whole, its bytes never trusted.
	if _, err := st.Put(ctx, ProofKey("s-abc"), []byte(`{"stream_id": "s-abc"`), store.None()); err != nil {
		t.Fatal(err)
	}
	cur, etag, err := LoadProofLedger(ctx, st, "s-abc")
	if !IsCorrupt(err) || cur != nil || etag == "" {
		t.Fatalf("damaged ledger: %v %v %q", err, cur, etag)
	}
	if _, _, err := SaveProofLedger(ctx, st, tp, "s-abc", nil, etag, ProofUpdate{Add: p[:1]}, 2700); err != nil {
		t.Fatal(err)
	}
	got, _, err = LoadProofLedger(ctx, st, "s-abc")
	if err != nil || len(got.Proofs) != 1 || got.Proofs[0].Key != p[0].Key {
		t.Fatalf("rebuilt: %v %+v", err, got)
	}
	// A stale ETag never overwrites: it re-reads and merges.
	if _, _, err := SaveProofLedger(ctx, st, tp, "s-abc", nil, `"stale"`, ProofUpdate{Add: p[1:]}, 2800); err != nil {
		t.Fatal(err)
	}
	got, _, _ = LoadProofLedger(ctx, st, "s-abc")
	if len(got.Proofs) != 2 {
		t.Fatalf("stale ETag lost a proof: %+v", got.Proofs)
	}
	if missing, etag, err := LoadProofLedger(ctx, st, "s-none"); missing != nil || etag != "" || err != nil {
		t.Fatalf("missing ledger: %v %q %v", missing, etag, err)
	}
}

// FuzzProofLedger: the ledger decoder refuses garbage with an error, never a
// panic; a ledger it accepts is sorted, one entry per key, each inside the
// stream, and re-encodes to bytes it accepts again as the same ledger.
func FuzzProofLedger(f *testing.F) {
	f.Add(Encode(validLedger()))
	f.Add(Encode(&ProofLedger{StreamID: "s-abc", Topic: "t", UpdatedMs: 1, Proofs: []Proof{}}))
	f.Add([]byte(`{"stream_id":"s-abc","topic":"t","partition":0,"updated_ms":1,"proofs":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeProofLedger("s-abc", data)
		if err != nil {
			if !IsCorrupt(err) {
				t.Fatalf("refused without a corrupt-document error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, p := range l.Proofs {
			if seen[p.Key] || (i > 0 && p.Key < l.Proofs[i-1].Key) || !strings.HasPrefix(p.Key, StreamPrefix("s-abc")) || p.ProvedMs > l.UpdatedMs {
				t.Fatalf("accepted a ledger breaking its rules: %+v", l.Proofs)
			}
			seen[p.Key] = true
		}
		enc := Encode(l)
		again, err := DecodeProofLedger("s-abc", enc)
		if err != nil {
			t.Fatalf("accepted, but its re-encoding is refused: %v", err)
		}
		if !bytes.Equal(Encode(again), enc) {
			t.Fatal("re-encoding decodes to another ledger")
		}
	})
}
