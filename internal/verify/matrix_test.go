package verify_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/recovery"
	"github.com/nereusctl/nereusctl/internal/repair"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
	"github.com/nereusctl/nereusctl/internal/verify"
)

var internalTPs = []layout.TopicPartition{{Topic: "__consumer_offsets", Partition: 0}, {Topic: "__transaction_state", Partition: 0}}

// demoStore is a small demo with ACTIVE coverage on the internal topics.
func demoStore(t *testing.T) *store.Mem {
	t.Helper()
	st := store.NewMem(t.Name())
	o := demo.DefaultOptions()
	o.Records, o.Partitions = 3000, 1
	if _, err := demo.Run(context.Background(), st, o); err != nil {
		t.Fatal(err)
	}
	return st
}

func clone(t *testing.T, src *store.Mem, name string) *store.Mem {
	t.Helper()
	ctx := context.Background()
	dst := store.NewMem(name)
	all, _ := src.List(ctx, "")
	for _, o := range all {
		b, _ := src.Get(ctx, o.Key, nil)
		if _, err := dst.Put(ctx, o.Key, b, store.None()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func binding(t *testing.T, st store.Store, tp layout.TopicPartition) (*layout.Binding, string) {
	t.Helper()
	b, etag, err := layout.LoadBinding(context.Background(), st, tp.Topic, tp.Partition)
	if err != nil {
		t.Fatal(err)
	}
	return b, etag
}

// splitSet rewrites tp's single-generation set as two generations (the
// rows split in two NTC2 objects) so that member-level damage can be made:
// a legitimate two-member set that verifies clean.
func splitSet(t *testing.T, st store.Store, tp layout.TopicPartition) (*layout.Binding, []*layout.Generation) {
	t.Helper()
	ctx := context.Background()
	b, etag := binding(t, st, tp)
	if b.Coverage.State != layout.CoverageActive || len(b.Coverage.Members) != 1 {
		t.Fatalf("%s: coverage %+v", tp, b.Coverage)
	}
	g, _, err := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
	if err != nil {
		t.Fatal(err)
	}
	var rows []ntc2.Row
	for _, o := range g.Objects {
		data, _ := st.Get(ctx, o.Key, nil)
		r, err := ntc2.Open(data)
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Rows(func(row ntc2.Row) error { rows = append(rows, row); return nil })
	}
	if len(rows) < 4 {
		t.Fatalf("%s: only %d rows", tp, len(rows))
	}
	mid := rows[len(rows)/2].Offset
	var gens []*layout.Generation
	var members []layout.SetMember
	for i, rng := range [][2]int64{{g.Base, mid}, {mid, g.End}} {
		var srcs []ntc2.Source
		for _, s := range g.Sources {
			srcs = append(srcs, ntc2.Source{Gen: s.Gen, ManifestSHA256: s.ManifestSHA256})
		}
		w := ntc2.NewWriterWith(ntc2.Meta{Base: rng[0], End: rng[1], Sources: srcs}, ntc2.WriterOptions{})
		for _, row := range rows {
			if row.Offset >= rng[0] && row.Offset < rng[1] {
				if err := w.Add(row); err != nil {
					t.Fatal(err)
				}
			}
		}
		data, _, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		sum := store.SHA256Of(data)
		key := compaction.CompactedKey(b.StreamID, sum)
		if _, err := st.Put(ctx, key, data, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		ng := &layout.Generation{StreamID: b.StreamID, Kind: layout.KindTopicCompacted, Base: rng[0], End: rng[1], Sources: g.Sources, MaxTimestamp: -1, CreatedMs: g.CreatedMs + int64(i),
			Objects: []layout.ObjectRef{{Key: key, Base: rng[0], End: rng[1], Size: int64(len(data)), ETag: store.ETagOf(data), CRC32C: stream.CRC32C(data), SHA256: sum}}}
		gen, err := stream.PublishGeneration(ctx, st, ng, g.Gen+1)
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, ng)
		members = append(members, layout.SetMember{Gen: gen, ManifestSHA256: layout.DocSHA256(ng)})
	}
	b.Coverage.Members = members
	b.Coverage.SetID = layout.SetID(members)
	b.Version++
	if _, err := layout.Replace(ctx, st, layout.BindingKey(tp.Topic, tp.Partition), b, etag); err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("%s: the split set does not verify clean: %+v %v", tp, rep, err)
	}
	return b, gens
}

type damage struct {
	name  string
	deep  bool // verify at the deep level
	check string
	do    func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation)
}

func objectOf(gens []*layout.Generation, i int) layout.ObjectRef { return gens[i].Objects[0] }

func mutate(t *testing.T, st store.Store, key string, f func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	data, err := st.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, key, f(append([]byte(nil), data...)), store.None()); err != nil {
		t.Fatal(err)
	}
}

func damages() []damage {
	return []damage{
		{"delete a member object", false, verify.CheckHead, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			if err := st.Delete(context.Background(), objectOf(gens, 1).Key, store.None()); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncate a member object", false, verify.CheckSize, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			mutate(t, st, objectOf(gens, 0).Key, func(d []byte) []byte { return d[:len(d)/2] })
		}},
		{"flip a byte in the data", false, verify.CheckETag, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			mutate(t, st, objectOf(gens, 1).Key, func(d []byte) []byte { d[20] ^= 0x10; return d })
		}},
		{"flip a byte in the footer", false, verify.CheckETag, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			mutate(t, st, objectOf(gens, 0).Key, func(d []byte) []byte { d[len(d)-12] ^= 0x01; return d })
		}},
		// Damage only --deep can see (bit rot under an unchanged size,
		// mtime and cached ETag) needs a real file: TestDeepOnlyBitRot.
		{"replace with another valid NTC2 object", false, verify.CheckSize, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			other, _ := st.Get(context.Background(), objectOf(gens, 1).Key, nil)
			mutate(t, st, objectOf(gens, 0).Key, func([]byte) []byte { return other })
		}},
		{"drop a member from the set", false, verify.CheckSetIdentity, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			b.Coverage.Members = b.Coverage.Members[:1]
			replaceBinding(t, st, b)
		}},
		{"create a gap", false, verify.CheckCoverageGap, func(t *testing.T, st store.Store, b *layout.Binding, gens []*layout.Generation) {
			// A legitimate-looking set whose second member starts late.
			ng := *gens[1]
			ng.Base++
			ng.Objects = append([]layout.ObjectRef(nil), ng.Objects...)
			ng.Objects[0].Base++
			gen, err := stream.PublishGeneration(context.Background(), st, &ng, ng.Gen+1)
			if err != nil {
				t.Fatal(err)
			}
			b.Coverage.Members[1] = layout.SetMember{Gen: gen, ManifestSHA256: layout.DocSHA256(&ng)}
			b.Coverage.SetID = layout.SetID(b.Coverage.Members)
			replaceBinding(t, st, b)
		}},
	}
}

func replaceBinding(t *testing.T, st store.Store, b *layout.Binding) {
	t.Helper()
	_, etag := binding(t, st, layout.TopicPartition{Topic: b.Topic, Partition: b.Partition})
	b.Version++
	if _, err := layout.Replace(context.Background(), st, layout.BindingKey(b.Topic, b.Partition), b, etag); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptionMatrix: each kind of damage to mandatory compacted coverage
// of __consumer_offsets and __transaction_state is found by the right
// check, quarantines the set, blocks the coordinator, and no read path
// serves anything for the partition afterwards.
func TestCorruptionMatrix(t *testing.T) {
	ctx := context.Background()
	base := demoStore(t)
	for _, tp := range internalTPs {
		for _, d := range damages() {
			t.Run(tp.String()+"/"+d.name, func(t *testing.T) {
				st := clone(t, base, t.Name())
				b, gens := splitSet(t, st, tp)
				d.do(t, st, b, gens)
				b, _ = binding(t, st, tp)
				rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: d.deep})
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, f := range rep.Findings {
					if f.Check == d.check && f.Scope == verify.ScopeCoverage {
						found = true
					}
				}
				if !found {
					t.Fatalf("no %s finding: %+v", d.check, rep.Findings)
				}
				if !rep.Quarantined || !rep.Blocked {
					t.Fatalf("not quarantined/blocked: %+v", rep)
				}
				b, _ = binding(t, st, tp)
				if b.Coverage.State != layout.CoverageQuarantined {
					t.Fatalf("coverage %s", b.Coverage.State)
				}
				var q layout.Quarantine
				if _, err := layout.Load(ctx, st, layout.QuarantineKey(b.Coverage.SetID), &q); err != nil || len(q.Findings) == 0 {
					t.Fatalf("quarantine record: %+v %v", q, err)
				}
				// No read path falls back to COMMITTED.
				if _, err := compaction.Read(ctx, st, b, 0, func(compaction.Record) error { return nil }); !errors.Is(err, layout.ErrBlocked) {
					t.Fatalf("read API: %v", err)
				}
				if _, err := recovery.Replay(ctx, st, b, recovery.Options{}); !errors.Is(err, layout.ErrBlocked) {
					t.Fatalf("replay: %v", err)
				}
				if _, err := compaction.Compact(ctx, st, b, compaction.Options{NowMs: 1}); !errors.Is(err, layout.ErrBlocked) {
					t.Fatalf("compact: %v", err)
				}
				// A second verify finds the partition blocked.
				rep, _ = verify.Partition(ctx, st, b, verify.Options{})
				if !rep.Blocked || rep.Quarantined {
					t.Fatalf("second verify: %+v", rep)
				}
			})
		}
	}
}

// damagedMember corrupts one member object and quarantines the set; it
// returns the original bytes and the member's digest.
func damagedMember(t *testing.T, st store.Store, tp layout.TopicPartition) ([]byte, string) {
	t.Helper()
	ctx := context.Background()
	b, gens := splitSet(t, st, tp)
	ref := objectOf(gens, 1)
	orig, _ := st.Get(ctx, ref.Key, nil)
	mutate(t, st, ref.Key, func(d []byte) []byte { d[len(d)/3] ^= 0x08; return d })
	if rep, err := verify.Partition(ctx, st, b, verify.Options{}); err != nil || !rep.Quarantined {
		t.Fatalf("not quarantined: %+v %v", rep, err)
	}
	return orig, ref.SHA256
}

func snapshotStore(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	all, _ := st.List(context.Background(), "")
	out := map[string]string{}
	for _, o := range all {
		out[o.Key] = o.ETag
	}
	return out
}

func checkClean(t *testing.T, st store.Store, tp layout.TopicPartition) {
	t.Helper()
	b, _ := binding(t, st, tp)
	if b.Coverage.State != layout.CoverageActive {
		t.Fatalf("coverage %s after repair", b.Coverage.State)
	}
	rep, err := verify.Partition(context.Background(), st, b, verify.Options{Deep: true})
	if err != nil || len(rep.Findings) != 0 || rep.Blocked {
		t.Fatalf("verify --deep after repair: %+v %v", rep, err)
	}
	if recs, _ := verify.Records(context.Background(), st); len(recs) != 0 {
		t.Fatalf("quarantine records left: %+v", recs)
	}
	arch, _ := st.List(context.Background(), layout.QuarantinePrefix+"archive/")
	if len(arch) != 1 {
		t.Fatalf("%d archived records", len(arch))
	}
}

func TestRepairSources(t *testing.T) {
	ctx := context.Background()
	base := demoStore(t)
	tp := internalTPs[0]
	dir := t.TempDir()
	for _, src := range []string{"file", "replica", "regenerate"} {
		t.Run(src, func(t *testing.T) {
			st := clone(t, base, t.Name())
			orig, digest := damagedMember(t, st, tp)
			o := repair.Options{Digest: digest}
			switch src {
			case "file":
				o.FromFile = fmt.Sprintf("%s/member.ntc2", dir)
				if err := writeFile(o.FromFile, orig); err != nil {
					t.Fatal(err)
				}
			case "replica":
				replica := store.NewMem(t.Name() + "-replica")
				ref := findRef(t, st, tp, digest)
				if _, err := replica.Put(ctx, ref.Key, orig, store.None()); err != nil {
					t.Fatal(err)
				}
				o.From = replica
			case "regenerate":
				o.Regenerate = true
			}
			b, _ := binding(t, st, tp)
			r, err := repair.Repair(ctx, st, b, o)
			if src == "regenerate" {
				// The split set's members were not made by compaction:
				// there is nothing to regenerate them from. It must refuse
				// and change nothing.
				if err == nil || r.Restored {
					t.Fatalf("regenerate of a hand-made member: %+v %v", r, err)
				}
				return
			}
			if err != nil || !r.Restored || !r.Reactivated {
				t.Fatalf("repair: %+v %v", r, err)
			}
			checkClean(t, st, tp)
		})
	}
}

// TestRepairRegenerate repairs a member made by compaction itself.
func TestRepairRegenerate(t *testing.T) {
	ctx := context.Background()
	st := demoStore(t)
	for _, tp := range internalTPs {
		b, _ := binding(t, st, tp)
		g, _, _ := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
		ref := g.Objects[0]
		if err := st.Delete(ctx, ref.Key, store.None()); err != nil {
			t.Fatal(err)
		}
		if rep, _ := verify.Partition(ctx, st, b, verify.Options{}); !rep.Quarantined {
			t.Fatalf("%s: not quarantined", tp)
		}
		b, _ = binding(t, st, tp)
		r, err := repair.Repair(ctx, st, b, repair.Options{Digest: ref.SHA256, Regenerate: true})
		if err != nil || !r.Restored || !r.Reactivated {
			t.Fatalf("%s: regenerate: %+v %v", tp, r, err)
		}
		b, _ = binding(t, st, tp)
		if rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true}); err != nil || len(rep.Findings) != 0 {
			t.Fatalf("%s: after regenerate: %+v %v", tp, rep, err)
		}
	}
}

func TestRepairRefusesWrongBytes(t *testing.T) {
	ctx := context.Background()
	st := clone(t, demoStore(t), "wrong")
	tp := internalTPs[1]
	_, digest := damagedMember(t, st, tp)
	before := snapshotStore(t, st)
	b, _ := binding(t, st, tp)
	other := fmt.Sprintf("%s/other.ntc2", t.TempDir())
	ref := findRef(t, st, tp, digest)
	// valid NTC2 bytes, but the other member's
	var otherKey string
	for _, m := range b.Coverage.Members {
		g, _, _ := layout.LoadGeneration(ctx, st, b.StreamID, m.Gen)
		if g.Objects[0].Key != ref.Key {
			otherKey = g.Objects[0].Key
		}
	}
	data, _ := st.Get(ctx, otherKey, nil)
	if err := writeFile(other, data); err != nil {
		t.Fatal(err)
	}
	_, err := repair.Repair(ctx, st, b, repair.Options{Digest: digest, FromFile: other})
	if !errors.Is(err, repair.ErrWrongBytes) {
		t.Fatalf("wrong bytes accepted: %v", err)
	}
	after := snapshotStore(t, st)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatal("a refused repair changed the store")
	}
	if _, err := repair.Repair(ctx, st, b, repair.Options{Digest: "00" + digest[2:], FromFile: other}); !errors.Is(err, repair.ErrUnknownDigest) {
		t.Fatalf("unknown digest: %v", err)
	}
}

// TestRepairCrashAtEveryStep: stopped after each step, a rerun ends ACTIVE
// with the right bytes; before the rerun the set is ACTIVE-and-right or
// still QUARANTINED, never half.
func TestRepairCrashAtEveryStep(t *testing.T) {
	ctx := context.Background()
	base := demoStore(t)
	tp := internalTPs[0]
	crash := errors.New("crash")
	for _, step := range []string{repair.StepRestored, repair.StepReactivated, repair.StepArchived} {
		st := clone(t, base, "crash-"+step)
		orig, digest := damagedMember(t, st, tp)
		file := fmt.Sprintf("%s/m.ntc2", t.TempDir())
		if err := writeFile(file, orig); err != nil {
			t.Fatal(err)
		}
		b, _ := binding(t, st, tp)
		_, err := repair.Repair(ctx, st, b, repair.Options{Digest: digest, FromFile: file, After: func(s string) error {
			if s == step {
				return crash
			}
			return nil
		}})
		if !errors.Is(err, crash) {
			t.Fatalf("%s: %v", step, err)
		}
		b, _ = binding(t, st, tp)
		if b.Coverage.State == layout.CoverageActive {
			if rep, _ := verify.Partition(ctx, st, b, verify.Options{Deep: true, NoQuarantine: true}); len(rep.Findings) != 0 {
				t.Fatalf("%s: ACTIVE with damaged bytes", step)
			}
		}
		// the operator reruns the same command
		if _, err := repair.Repair(ctx, st, b, repair.Options{Digest: digest, FromFile: file}); err != nil {
			t.Fatalf("%s rerun: %v", step, err)
		}
		checkClean(t, st, tp)
	}
}

func findRef(t *testing.T, st store.Store, tp layout.TopicPartition, digest string) layout.ObjectRef {
	t.Helper()
	b, _ := binding(t, st, tp)
	for _, m := range b.Coverage.Members {
		g, _, _ := layout.LoadGeneration(context.Background(), st, b.StreamID, m.Gen)
		for _, o := range g.Objects {
			if o.SHA256 == digest {
				return o
			}
		}
	}
	t.Fatalf("no member with digest %s", digest)
	return layout.ObjectRef{}
}

// TestRepairAllFromReplica: every damaged member of every quarantined set
// is restored from a replica store holding the same keys.
func TestRepairAllFromReplica(t *testing.T) {
	ctx := context.Background()
	st := clone(t, demoStore(t), "allfrom")
	replica := clone(t, st, "allfrom-replica")
	for _, tp := range internalTPs {
		b, _ := binding(t, st, tp)
		g, _, _ := layout.LoadGeneration(ctx, st, b.StreamID, b.Coverage.Members[0].Gen)
		if err := st.Delete(ctx, g.Objects[0].Key, store.None()); err != nil {
			t.Fatal(err)
		}
		if rep, _ := verify.Partition(ctx, st, b, verify.Options{}); !rep.Quarantined {
			t.Fatalf("%s not quarantined", tp)
		}
	}
	if recs, _ := verify.Records(ctx, st); len(recs) != 2 {
		t.Fatalf("%d quarantine records, want 2", len(recs))
	}
	// As repair --all-from does: each quarantined partition in turn.
	tps, err := repair.QuarantinedPartitions(ctx, st)
	if err != nil || len(tps) != 2 {
		t.Fatalf("quarantined partitions %v, %v; want 2", tps, err)
	}
	for _, tp := range tps {
		if _, err := repair.AllFromPartition(ctx, st, replica, tp, repair.Options{NowMs: 1}); err != nil {
			t.Fatalf("all-from %s: %v", tp, err)
		}
	}
	for _, tp := range internalTPs {
		b, _ := binding(t, st, tp)
		if b.Coverage.State != layout.CoverageActive {
			t.Fatalf("%s: %s after all-from", tp, b.Coverage.State)
		}
		if rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true}); err != nil || len(rep.Findings) != 0 {
			t.Fatalf("%s: %+v %v", tp, rep, err)
		}
	}
}

// TestSampleCoversEverythingOnce: t nightly runs n = 0..t-1 hash every
// object exactly once.
func TestSampleCoversEverythingOnce(t *testing.T) {
	for _, tt := range []int{1, 2, 7, 30} {
		for i := 0; i < 500; i++ {
			key := fmt.Sprintf("streams/s-%d/objects/%020d-%020d.kb", i%7, i*10, i*10+10)
			hits := 0
			for n := 0; n < tt; n++ {
				if (&verify.Sample{N: n, T: tt}).Has(key) {
					hits++
				}
			}
			if hits != 1 {
				t.Fatalf("t=%d: %s is in %d slices", tt, key, hits)
			}
		}
	}
	for _, bad := range []string{"", "3/3", "-1/2", "x/2", "1/0"} {
		if _, err := verify.ParseSample(bad); err == nil {
			t.Errorf("ParseSample(%q) accepted", bad)
		}
	}
	// a sampled deep verify hashes only part of the bytes
	ctx := context.Background()
	st := demoStore(t)
	b, _ := binding(t, st, layout.TopicPartition{Topic: "orders", Partition: 0})
	full, _ := verify.Partition(ctx, st, b, verify.Options{Deep: true})
	total := int64(0)
	for n := 0; n < 4; n++ {
		rep, err := verify.Partition(ctx, st, b, verify.Options{Deep: true, Sample: &verify.Sample{N: n, T: 4}})
		if err != nil || len(rep.Findings) != 0 {
			t.Fatal(rep, err)
		}
		if rep.BytesHashed >= full.BytesHashed {
			t.Fatalf("slice %d/4 hashed %d of %d bytes", n, rep.BytesHashed, full.BytesHashed)
		}
		total += rep.BytesHashed
	}
	if total != full.BytesHashed {
		t.Fatalf("the 4 slices hashed %d bytes, a full deep verify %d", total, full.BytesHashed)
	}
}

// fileClone copies src into a fresh file:// store and returns it and its
// folder.
func fileClone(t *testing.T, src *store.Mem) (*store.File, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	dst, err := store.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := src.List(ctx, "")
	for _, o := range all {
		b, _ := src.Get(ctx, o.Key, nil)
		if _, err := dst.Put(ctx, o.Key, b, store.None()); err != nil {
			t.Fatal(err)
		}
	}
	return dst, dir
}

// rotBit flips one bit of a file in place, as bit rot does: no write
// through the store, the same inode and size, the mtime put back exactly,
// the digest cache in the extended attribute left as it was.
func rotBit(t *testing.T, path string, at int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, fi.Mode().Perm()|0o200); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x08
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) || !os.SameFile(fi, after) {
		t.Fatalf("bit rot changed more than one bit: %v", err)
	}
}

// TestDeepOnlyBitRot: on file://, a bit flipped inside a member of the
// mandatory compacted coverage, under an unchanged size, mtime and cached
// ETag, is invisible to the default level (HEAD: size and ETag, from the
// digest cache) and found by --deep (the full SHA-256), which quarantines
// the set and blocks the coordinator.
func TestDeepOnlyBitRot(t *testing.T) {
	ctx := context.Background()
	base := demoStore(t)
	for _, tp := range internalTPs {
		t.Run(tp.String(), func(t *testing.T) {
			st, dir := fileClone(t, clone(t, base, t.Name()))
			_, gens := splitSet(t, st, tp)
			ref := objectOf(gens, 1)
			path := filepath.Join(dir, filepath.FromSlash(ref.Key))
			// An object written a while ago: its digest, recorded now,
			// is trusted (not within the racy second after its mtime).
			old := time.Now().Add(-time.Hour).Truncate(time.Second)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			if info, err := st.Head(ctx, ref.Key); err != nil || info.ETag != ref.ETag {
				t.Fatalf("head before the damage: %+v %v", info, err)
			}
			rotBit(t, path, ref.Size/2)

			// A new process (no in-memory cache) sees the same size and
			// the cached ETag: the default level says clean.
			st2, err := store.NewFile(dir)
			if err != nil {
				t.Fatal(err)
			}
			if info, err := st2.Head(ctx, ref.Key); err != nil || info.ETag != ref.ETag || info.Size != ref.Size {
				t.Fatalf("the damage is visible to HEAD (%+v, %v): not a deep-only damage", info, err)
			}
			b, _ := binding(t, st2, tp)
			rep, err := verify.Partition(ctx, st2, b, verify.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != 0 || rep.Quarantined || rep.Blocked {
				t.Fatalf("the default level found the deep-only damage: %+v", rep)
			}
			rep, err = verify.Partition(ctx, st2, b, verify.Options{Deep: true})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range rep.Findings {
				if f.Scope == verify.ScopeCoverage && (f.Check == verify.CheckSHA256 || f.Check == verify.CheckCRC) {
					found = true
				}
			}
			if !found || !rep.Quarantined || !rep.Blocked {
				t.Fatalf("--deep did not find and quarantine the bit rot: %+v", rep)
			}
			if b, _ := binding(t, st2, tp); b.Coverage.State != layout.CoverageQuarantined {
				t.Fatalf("coverage %s after the deep finding", b.Coverage.State)
			}
		})
	}
}
