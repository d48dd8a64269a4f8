package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The bit-flip sweep: for each kind of object and document a small demo
// store holds (binding, head, generation manifest, COMMITTED object, NKC1
// checkpoint, NTC2 object, and an open-segment object, which no manifest
// covers: there the batch headers' bits), flip one bit at a time, through the store (as
// if the object had been written with that bit flipped, so its ETag matches
// its bytes), run the commands that read it, and classify the flip:
//
//	detected  a reader exits 3 or 4 (named check), and no reader that
//	          reports state reports a different one;
//	harmless  every reader exits 0 with the state of the untouched store;
//	silent    a reader exits 0 with a different state (a wrong answer);
//	wrong     a reader exits with another code (1, 2: not a verdict).
//
// After the readers, `checkpoint create` must not persist state from the
// flipped bytes: a checkpoint it publishes must be the one it publishes on
// the untouched store. The store is restored after every flip.
//
// By default a deterministic sample of each instance's bits is flipped (a
// short smoke for the test suite); NEREUS_BITFLIP=full flips every bit of
// the documents and at least 2,000 bits of each binary object, and prints
// the counts the closing notes quote:
//
//	NEREUS_BITFLIP=full go test -run TestBitFlipSweep -v -timeout 60m .
//
// With full, every bit of every batch header of the open-segment object is
// flipped (1,952 bits of four headers: 1,952 detected, 0 silent, with the
// head's leader-epoch record; before it, 128 of 192 sampled flips of the
// leader epochs were silent and 120 persisted by checkpoint create).
func TestBitFlipSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("the bit-flip sweep runs without -short")
	}
	full := os.Getenv("NEREUS_BITFLIP") == "full"
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, ".state"))
	root := filepath.Join(dir, "store")
	url := "file://" + root
	sw := &sweep{t: t, root: root, url: url}
	sw.run(0, "demo", "--no-tour", "-q", "--records", "4000", "--partitions", "1",
		"--topics", "orders,customers,__consumer_offsets")
	ctx := context.Background()
	st, err := store.Open(ctx, url, store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sw.st = st

	orders := sw.binding("orders", 0)
	customers := sw.binding("customers", 0)
	tail := sw.sealedTailObject(orders)
	open := sw.openSegmentObject(orders)
	targets := []flipTarget{
		{kind: "binding", key: layout.BindingKey("orders", 0), part: "orders-0", readers: []flipReader{statusReader("orders-0"), replayReader("orders-0"), retentionReader("orders-0")}},
		{kind: "head", key: layout.HeadKey(orders.StreamID), part: "orders-0", readers: []flipReader{statusReader("orders-0"), replayReader("orders-0")}},
		{kind: "generation manifest", key: tail.manifest, part: "orders-0", readers: []flipReader{replayReader("orders-0"), verifyReader("orders-0")}},
		{kind: "COMMITTED object", key: tail.object, part: "orders-0", readers: []flipReader{replayReader("orders-0"), verifyReader("orders-0", "--deep")}},
		{kind: "NKC1 checkpoint", key: orders.CheckpointRef.Key, part: "orders-0", readers: []flipReader{replayReader("orders-0"), checkpointVerifyReader("orders-0")}},
		{kind: "NTC2 object", key: sw.coverageMember(customers), part: "customers-0", readers: []flipReader{dumpReader("customers-0"), verifyReader("customers-0", "--deep")}},
		// An object of the open segment (in no manifest yet) above the
		// checkpoint: the replay reads it, and only the batch CRCs and the
		// head's leader-epoch record cover its bytes. Its flips are its
		// batch headers' bits (all of them with NEREUS_BITFLIP=full).
		{kind: "open-segment object", key: open, part: "orders-0", headers: true, readers: []flipReader{replayReader("orders-0"), verifyReader("orders-0", "--deep"), dumpReader("orders-0")}},
	}
	var report []string
	for _, tg := range targets {
		tg := tg
		t.Run(strings.ReplaceAll(tg.kind, " ", "_"), func(t *testing.T) {
			c := sw.sweepTarget(t, tg, full)
			report = append(report, fmt.Sprintf("%-20s %-70s bits %6d  flipped %5d  detected %5d  harmless %5d  silent %d  wrong %d  persisted %d",
				tg.kind, tg.key, c.bits, c.tried, c.detected, c.harmless, c.silent, c.wrong, c.persisted))
		})
	}
	t.Logf("bit-flip sweep (full=%v):\n%s", full, strings.Join(report, "\n"))
}

type flipTarget struct {
	kind    string
	key     string
	part    string
	readers []flipReader
	// headers: flip only the bits of the object's batch headers (the 61
	// bytes at the start of each RecordBatch v2).
	headers bool
}

// flipReader is a command that reads the target and, when it reports
// state, the part of its output that must not change (state == nil: a
// verifier, whose verdict is its exit code).
type flipReader struct {
	args  []string
	state func(stdout []byte) (string, error)
}

func (r flipReader) name() string { return strings.Join(r.args, " ") }

type flipCounts struct {
	bits, tried, detected, harmless, silent, wrong, persisted int
}

type sweep struct {
	t    *testing.T
	root string
	url  string
	st   store.Store
}

// run executes nereusctl in process on the sweep's store; want < 0 accepts
// any exit code.
func (s *sweep) run(want int, args ...string) (int, []byte, []byte) {
	s.t.Helper()
	var out, errb bytes.Buffer
	code := cmd.Execute(context.Background(), append([]string{"--store", s.url}, args...), &out, &errb)
	if want >= 0 && code != want {
		s.t.Fatalf("nereusctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	return code, out.Bytes(), errb.Bytes()
}

func (s *sweep) binding(topic string, p int32) *layout.Binding {
	b, _, err := layout.LoadBinding(context.Background(), s.st, topic, p)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

type tailObject struct{ manifest, object string }

// sealedTailObject is the first object of the newest COMMITTED generation
// that lies above the binding's checkpoint: the restart replay reads it and
// its manifest.
func (s *sweep) sealedTailObject(b *layout.Binding) tailObject {
	ctx := context.Background()
	gens, err := layout.ListGenerations(ctx, s.st, b.StreamID)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := len(gens) - 1; i >= 0; i-- {
		g, _, err := layout.LoadGeneration(ctx, s.st, b.StreamID, gens[i])
		if err != nil {
			s.t.Fatal(err)
		}
		if g.Kind == layout.KindCommitted && g.Base >= b.CheckpointRef.Anchor && len(g.Objects) > 0 {
			return tailObject{manifest: layout.GenerationKey(b.StreamID, gens[i]), object: g.Objects[0].Key}
		}
	}
	s.t.Fatalf("%s: no sealed COMMITTED generation above the checkpoint at %d", b.Name(), b.CheckpointRef.Anchor)
	return tailObject{}
}

// openSegmentObject is the first object above the last sealed COMMITTED
// generation (the open segment, in no manifest) that lies above the
// binding's checkpoint: the restart replay reads it.
func (s *sweep) openSegmentObject(b *layout.Binding) string {
	ctx := context.Background()
	h, _, err := layout.LoadHead(ctx, s.st, b.StreamID)
	if err != nil {
		s.t.Fatal(err)
	}
	gens, err := layout.ListGenerations(ctx, s.st, b.StreamID)
	if err != nil {
		s.t.Fatal(err)
	}
	sealed := int64(0)
	for _, n := range gens {
		g, _, err := layout.LoadGeneration(ctx, s.st, b.StreamID, n)
		if err != nil {
			s.t.Fatal(err)
		}
		if g.Kind == layout.KindCommitted {
			sealed = max(sealed, g.End)
		}
	}
	objs, err := layout.ListObjects(ctx, s.st, b.StreamID)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, o := range objs {
		if o.Base >= sealed && o.Base >= b.CheckpointRef.Anchor && o.End <= h.Head {
			return o.Key
		}
	}
	s.t.Fatalf("%s: no open-segment object above the checkpoint at %d (sealed to %d, head %d)", b.Name(), b.CheckpointRef.Anchor, sealed, h.Head)
	return ""
}

// headerBit is a bit of a batch header: its position in the object and
// the byte of the header it is in.
type headerBit struct{ bit, at int }

// headerBits is every bit of the batch headers of a RecordBatch v2
// object: 61 bytes at each batch's start.
func headerBits(t *testing.T, data []byte) []headerBit {
	var out []headerBit
	for pos := 0; pos < len(data); {
		if len(data)-pos < kafka.HeaderSize {
			t.Fatalf("object: %d bytes left at %d, less than a batch header", len(data)-pos, pos)
		}
		h, err := kafka.ParseHeader(data[pos:])
		if err != nil {
			t.Fatal(err)
		}
		for i := range kafka.HeaderSize * 8 {
			out = append(out, headerBit{bit: pos*8 + i, at: i / 8})
		}
		pos += h.Size()
	}
	return out
}

func (s *sweep) coverageMember(b *layout.Binding) string {
	ctx := context.Background()
	if b.Coverage.State != layout.CoverageActive || len(b.Coverage.Members) == 0 {
		s.t.Fatalf("%s: coverage %s, want ACTIVE", b.Name(), b.Coverage.State)
	}
	g, _, err := layout.LoadGeneration(ctx, s.st, b.StreamID, b.Coverage.Members[0].Gen)
	if err != nil {
		s.t.Fatal(err)
	}
	return g.Objects[0].Key
}

// snapshot is the store's files (key → size and mtime), to find what a
// command changed.
type fileStamp struct {
	size  int64
	mtime time.Time
}

func (s *sweep) snapshot() map[string]fileStamp {
	m := map[string]fileStamp{}
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".nereus-") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".nereus-") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.root, p)
		m[filepath.ToSlash(rel)] = fileStamp{fi.Size(), fi.ModTime()}
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

// restore puts the store back as it was at snap: changed objects get their
// bytes back through the store, new ones are deleted.
func (s *sweep) restore(snap map[string]fileStamp, pristine map[string][]byte) {
	ctx := context.Background()
	now := s.snapshot()
	for k, st := range now {
		old, ok := snap[k]
		switch {
		case !ok:
			if err := s.st.Delete(ctx, k, store.None()); err != nil {
				s.t.Fatalf("restore: delete %s: %v", k, err)
			}
		case old != st:
			data, ok := pristine[k]
			if !ok {
				s.t.Fatalf("restore: %s changed and no pristine copy was kept", k)
			}
			if _, err := s.st.Put(ctx, k, data, store.None()); err != nil {
				s.t.Fatalf("restore: %s: %v", k, err)
			}
		}
	}
	for k := range snap {
		if _, ok := now[k]; !ok {
			data, ok := pristine[k]
			if !ok {
				s.t.Fatalf("restore: %s deleted and no pristine copy was kept", k)
			}
			if _, err := s.st.Put(ctx, k, data, store.None()); err != nil {
				s.t.Fatalf("restore: %s: %v", k, err)
			}
		}
	}
}

// pristine keeps the bytes of every document and of the target: what a
// command may rewrite (bindings, heads, quarantine records) or what the
// sweep flips.
func (s *sweep) pristine(target string) map[string][]byte {
	m := map[string][]byte{}
	for k := range s.snapshot() {
		if k == target || strings.HasSuffix(k, ".json") {
			data, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(k)))
			if err != nil {
				s.t.Fatal(err)
			}
			m[k] = data
		}
	}
	return m
}

func (s *sweep) checkpoints(part string) []string {
	var out []string
	for k := range s.snapshot() {
		if strings.HasSuffix(k, ".nkc1") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (s *sweep) sweepTarget(t *testing.T, tg flipTarget, full bool) flipCounts {
	ctx := context.Background()
	orig, err := store.GetCapped(ctx, s.st, tg.key, 1<<30)
	if err != nil {
		t.Fatalf("%s %s: %v", tg.kind, tg.key, err)
	}
	// The untouched store: each reader's state, and what checkpoint create
	// publishes (computed on the untouched store, then undone).
	snap := s.snapshot()
	pristine := s.pristine(tg.key)
	base := make([]string, len(tg.readers))
	for i, r := range tg.readers {
		code, out, errb := s.run(-1, r.args...)
		if code != 0 {
			t.Fatalf("untouched store: nereusctl %s: exit %d\n%s", r.name(), code, errb)
		}
		if r.state != nil {
			if base[i], err = r.state(out); err != nil {
				t.Fatalf("untouched store: %s: %v", r.name(), err)
			}
		}
	}
	before := s.checkpoints(tg.part)
	s.run(0, "checkpoint", "create", tg.part)
	good := s.checkpoints(tg.part)
	s.restore(snap, pristine)

	bits := len(orig) * 8
	var sample []int
	switch {
	case tg.headers:
		all := headerBits(t, orig)
		bits = len(all)
		if full {
			for _, hb := range all {
				sample = append(sample, hb.bit)
			}
			break
		}
		// Every bit of every batch's partition leader epoch (bytes 12-15,
		// outside the CRC), and a deterministic sample of 64 of the
		// header's other bits.
		rng := rand.New(rand.NewPCG(uint64(len(orig)), 11))
		var rest []int
		for _, hb := range all {
			if hb.at >= 12 && hb.at < 16 {
				sample = append(sample, hb.bit)
			} else {
				rest = append(rest, hb.bit)
			}
		}
		rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		sample = append(sample, rest[:min(64, len(rest))]...)
		slices.Sort(sample)
	case full && (strings.HasSuffix(tg.key, ".json") || bits <= 4000):
		for i := range bits {
			sample = append(sample, i)
		}
	default:
		n := 96
		if full {
			n = 2000
		}
		rng := rand.New(rand.NewPCG(uint64(len(orig)), 7))
		seen := map[int]bool{}
		for len(sample) < min(n, bits) {
			if b := rng.IntN(bits); !seen[b] {
				seen[b] = true
				sample = append(sample, b)
			}
		}
		slices.Sort(sample)
	}
	c := flipCounts{bits: bits}
	reported := 0
	report := func(format string, args ...any) {
		if reported++; reported <= 5 {
			t.Errorf(format, args...)
		}
	}
	defer func() {
		if reported > 5 {
			t.Errorf("%s %s: %d more failures not shown", tg.kind, tg.key, reported-5)
		}
	}()
	flipped := make([]byte, len(orig))
	for _, bit := range sample {
		copy(flipped, orig)
		flipped[bit/8] ^= 1 << (bit % 8)
		if _, err := s.st.Put(ctx, tg.key, flipped, store.None()); err != nil {
			t.Fatal(err)
		}
		c.tried++
		var detected, silent, wrong []string
		for i, r := range tg.readers {
			code, out, errb := s.run(-1, r.args...)
			switch code {
			case 3, 4:
				detected = append(detected, r.name())
			case 0:
				if r.state == nil {
					continue
				}
				got, err := r.state(out)
				if err != nil || got != base[i] {
					silent = append(silent, fmt.Sprintf("%s: state %q, untouched %q (%v)", r.name(), got, base[i], err))
				}
			default:
				wrong = append(wrong, fmt.Sprintf("%s: exit %d: %s", r.name(), code, strings.TrimSpace(string(errb))))
			}
		}
		switch {
		case len(silent) > 0:
			c.silent++
			report("%s %s bit %d (byte %d): silent: %s", tg.kind, tg.key, bit, bit/8, strings.Join(silent, "; "))
		case len(wrong) > 0:
			c.wrong++
			report("%s %s bit %d (byte %d): not a verdict: %s", tg.kind, tg.key, bit, bit/8, strings.Join(wrong, "; "))
		case len(detected) > 0:
			c.detected++
		default:
			c.harmless++
		}
		// No state persisted from the flipped bytes.
		s.run(-1, "checkpoint", "create", tg.part)
		for _, k := range s.checkpoints(tg.part) {
			if !slices.Contains(good, k) && !slices.Contains(before, k) {
				c.persisted++
				report("%s %s bit %d: checkpoint create published %s, which it does not publish on the untouched store", tg.kind, tg.key, bit, k)
			}
		}
		s.restore(snap, pristine)
		if _, err := s.st.Put(ctx, tg.key, orig, store.None()); err != nil {
			t.Fatal(err)
		}
		snap = s.snapshot()
	}
	return c
}

// Readers and the state they report.

func jsonState(keys ...string) func([]byte) (string, error) {
	return func(out []byte) (string, error) {
		var doc map[string]any
		if err := json.Unmarshal(out, &doc); err != nil {
			return "", err
		}
		return pick(doc, keys), nil
	}
}

func pick(doc map[string]any, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		v, _ := json.Marshal(doc[k])
		fmt.Fprintf(&b, "%s=%s ", k, v)
	}
	return b.String()
}

func replayReader(part string) flipReader {
	return flipReader{args: []string{"-o", "json", "replay", part},
		state: jsonState("log_start", "head", "lso", "state_digest")}
}

func statusReader(part string) flipReader {
	return flipReader{args: []string{"-o", "json", "status", part}, state: func(out []byte) (string, error) {
		var doc struct {
			Partitions []map[string]any `json:"partitions"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			return "", err
		}
		if len(doc.Partitions) != 1 {
			return "", fmt.Errorf("%d partitions", len(doc.Partitions))
		}
		return pick(doc.Partitions[0], []string{"topic", "partition", "stream_id", "log_start", "head", "lso", "checkpoint_anchor", "coverage", "blocked"}), nil
	}}
}

// retentionReader plans retention (a dry run): a binding's config decides
// what it would trim.
func retentionReader(part string) flipReader {
	return flipReader{args: []string{"-o", "json", "retention", "run", part, "--dry-run", "--now", "2030-01-01T00:00:00Z"}, state: func(out []byte) (string, error) {
		var doc struct {
			Partitions []map[string]any `json:"partitions"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range doc.Partitions {
			b.WriteString(pick(p, []string{"topic", "partition", "current_log_start", "new_log_start", "error"}))
		}
		return b.String(), nil
	}}
}

// dumpReader is what a READ_COMMITTED consumer would read.
func dumpReader(part string) flipReader {
	return flipReader{args: []string{"-o", "json", "dump", part, "--deep"}, state: func(out []byte) (string, error) {
		sum := sha256.Sum256(out)
		return hex.EncodeToString(sum[:]), nil
	}}
}

func verifyReader(part string, flags ...string) flipReader {
	return flipReader{args: append([]string{"verify", part}, flags...)}
}

func checkpointVerifyReader(part string) flipReader {
	return flipReader{args: []string{"checkpoint", "verify", part}}
}
