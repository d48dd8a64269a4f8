package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nereusctl/nereusctl/cmd"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// The damage × command matrix of the health gate (docs/exit-codes.md,
// "Damage and command"): one thing damaged at a time on a demo store,
// every command that reads or acts on the damaged partition exits with
// the code verify gives (3 for missing or corrupt data, 4 when blocked),
// names what it found, and a refused mutation leaves the store tree
// byte-identical.

var (
	matrixOnce sync.Once
	matrixBase string
	matrixErr  string
)

// matrixDemo is one demo store all cases copy.
func matrixDemo(t *testing.T) string {
	t.Helper()
	matrixOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nereus-matrix-")
		if err != nil {
			matrixErr = err.Error()
			return
		}
		var out, errb bytes.Buffer
		if code := cmd.Execute(context.Background(), []string{"--store", "file://" + dir, "demo", "--no-tour", "--partitions", "1", "--records", "600"}, &out, &errb); code != 0 {
			matrixErr = errb.String()
			return
		}
		matrixBase = dir
	})
	if matrixErr != "" {
		t.Fatalf("demo: %s", matrixErr)
	}
	return matrixBase
}

// copyTree copies a store folder.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// treeSums is every key of a store folder with the SHA-256 of its bytes,
// leases/ and tasks/ left out (a command takes and releases leases and
// keeps its progress there even when it refuses every partition).
func treeSums(t *testing.T, dir string, under ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "leases/") || strings.HasPrefix(rel, "tasks/") || strings.Contains(rel, ".nereus") {
			return nil
		}
		if len(under) > 0 && !slices.ContainsFunc(under, func(u string) bool { return strings.HasPrefix(rel, u) }) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSums(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k)
		}
	}
	sort.Strings(d)
	return d
}

// matrixStore is a damaged copy: the file:// store's folder and its Store.
type matrixStore struct {
	dir string
	st  store.Store
}

func (m *matrixStore) binding(t *testing.T, topic string) *layout.Binding {
	t.Helper()
	b, _, err := layout.LoadBinding(context.Background(), m.st, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (m *matrixStore) put(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := m.st.Put(context.Background(), key, data, store.None()); err != nil {
		t.Fatal(err)
	}
}

func (m *matrixStore) del(t *testing.T, key string) {
	t.Helper()
	if err := m.st.Delete(context.Background(), key, store.None()); err != nil {
		t.Fatal(err)
	}
}

func (m *matrixStore) list(t *testing.T, prefix string) []store.ObjectInfo {
	t.Helper()
	infos, err := m.st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// A command of the matrix: its arguments (P: the damaged partition), the
// code it must exit with, whether it mutates (then a refusal must leave the
// store unchanged) and, for a run over many partitions, which keys must
// stay unchanged.
type matrixCmd struct {
	args   string
	code   int
	mutate bool
}

type matrixDamage struct {
	name      string
	partition string // TOPIC-PARTITION damaged
	// damage changes the store and returns what the output must name.
	damage func(t *testing.T, m *matrixStore) string
	cmds   []matrixCmd
}

func TestHealthGateMatrix(t *testing.T) {
	base := matrixDemo(t)
	readers := func(code int) []matrixCmd {
		return []matrixCmd{
			{"status", code, false},
			{"status P", code, false},
			{"replay P", code, false},
			{"dump P", code, false},
			{"checkpoint verify --all", code, false},
			{"verify --all --read-only", code, false},
		}
	}
	mutators := func(code int, compacted bool) []matrixCmd {
		cs := []matrixCmd{
			{"trim P --to 10", code, true},
			{"retention run --all --yes --now 2031-01-01T00:00:00Z", code, true},
			{"checkpoint create P", code, true},
			{"gc --grace 0s", code, true},
		}
		if compacted {
			cs = append(cs, matrixCmd{"compact P --now 2031-01-01T00:00:00Z", code, true})
		} else {
			cs = append(cs, matrixCmd{"delete-records --offset-json-file OFFSETS", code, true})
		}
		return cs
	}
	damages := []matrixDamage{
		{
			name: "head rolled back below the stream's objects", partition: "orders-0",
			damage: func(t *testing.T, m *matrixStore) string {
				b := m.binding(t, "orders")
				h, _, err := layout.LoadHead(context.Background(), m.st, b.StreamID)
				if err != nil {
					t.Fatal(err)
				}
				h.Head = b.CheckpointRef.Anchor // an old copy: still above the checkpoint the binding names
				m.put(t, layout.HeadKey(b.StreamID), layout.Encode(h))
				return "beyond-head"
			},
			cmds: append(readers(3), mutators(3, false)...),
		},
		{
			name: "garbage sealed generation manifest", partition: "orders-0",
			damage: func(t *testing.T, m *matrixStore) string {
				b := m.binding(t, "orders")
				gens := m.list(t, layout.GenerationsPrefix(b.StreamID))
				m.put(t, gens[0].Key, []byte("garbage"))
				return gens[0].Key
			},
			cmds: append(readers(3), mutators(3, false)...),
		},
		{
			name: "missing stream head", partition: "orders-0",
			damage: func(t *testing.T, m *matrixStore) string {
				b := m.binding(t, "orders")
				m.del(t, layout.HeadKey(b.StreamID))
				return "head"
			},
			cmds: append(readers(3), mutators(3, false)...),
		},
		{
			name: "every NTC2 member of a coordinator deleted", partition: "__consumer_offsets-0",
			damage: func(t *testing.T, m *matrixStore) string {
				b := m.binding(t, "__consumer_offsets")
				views := m.list(t, layout.CompactedPrefix(b.StreamID))
				if len(views) == 0 {
					t.Fatal("no compacted views to delete")
				}
				for _, in := range views {
					m.del(t, in.Key)
				}
				return layout.CompactedPrefix(b.StreamID)
			},
			cmds: append(readers(3), mutators(3, true)...),
		},
		{
			name: "coverage hand-set to NONE on a coordinator", partition: "__consumer_offsets-0",
			damage: func(t *testing.T, m *matrixStore) string {
				b := m.binding(t, "__consumer_offsets")
				b.Coverage = layout.Coverage{State: layout.CoverageNone}
				m.put(t, layout.BindingKey(b.Topic, b.Partition), layout.Encode(b))
				return "mandatory compacted coverage is missing"
			},
			cmds: append(readers(4), matrixCmd{"trim P --to 10", 4, true}, matrixCmd{"retention run --all --yes --now 2031-01-01T00:00:00Z", 4, true},
				matrixCmd{"checkpoint create P", 4, true}, matrixCmd{"compact P --now 2031-01-01T00:00:00Z", 4, true}),
		},
		{
			name: "newest checkpoint damaged", partition: "orders-0",
			damage: func(t *testing.T, m *matrixStore) string {
				b := m.binding(t, "orders")
				cps := m.list(t, layout.CheckpointsPrefix(b.StreamID))
				newest := cps[len(cps)-1].Key
				data, err := m.st.Get(context.Background(), newest, nil)
				if err != nil {
					t.Fatal(err)
				}
				data[len(data)/2] ^= 0x40
				m.put(t, newest, data)
				return newest
			},
			// Readers that consult checkpoints say so; a mutation is not
			// refused for it (checkpoint create is its remedy).
			cmds: []matrixCmd{{"status", 3, false}, {"status P", 3, false}, {"replay P", 3, false}, {"replay P --compare", 3, false},
				{"checkpoint verify --all", 3, false}, {"verify --all --read-only", 3, false}},
		},
		{
			name: "deleted binding (a lost partition)", partition: "orders-0",
			damage: func(t *testing.T, m *matrixStore) string {
				m.del(t, layout.BindingKey("orders", 0))
				return "orphan-stream"
			},
			cmds: []matrixCmd{{"status", 3, false}, {"verify --all --read-only", 3, false}, {"verify --all --deep --read-only", 3, false},
				{"retention run --all --yes --now 2031-01-01T00:00:00Z", 0, false}, {"gc --grace 0s", 0, false}},
		},
		{
			name: "stray key under bindings/", partition: "",
			damage: func(t *testing.T, m *matrixStore) string {
				m.put(t, "bindings/README", []byte("notes"))
				m.put(t, "bindings/orders/00.json", []byte("{}"))
				return "stray-key"
			},
			cmds: []matrixCmd{{"status", 3, false}, {"verify --all --read-only", 3, false}, {"checkpoint verify --all", 0, false},
				{"retention run --all --dry-run --now 2031-01-01T00:00:00Z", 0, false}, {"gc --dry-run", 0, false}},
		},
		{
			name: "corrupt quarantine record", partition: "",
			damage: func(t *testing.T, m *matrixStore) string {
				m.put(t, "quarantine/"+strings.Repeat("ab", 32)+".json", []byte("{not json"))
				return "quarantine-record"
			},
			cmds: []matrixCmd{{"status", 3, false}, {"verify --all --read-only", 3, false}},
		},
	}
	dir := t.TempDir()
	offsets := filepath.Join(dir, "offsets.json")
	if err := os.WriteFile(offsets, []byte(`{"partitions": [{"topic": "orders", "partition": 0, "offset": 10}], "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range damages {
		for _, c := range d.cmds {
			t.Run(d.name+"/"+c.args, func(t *testing.T) {
				sdir := filepath.Join(t.TempDir(), "store")
				copyTree(t, base, sdir)
				st, err := store.NewFile(sdir)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				m := &matrixStore{dir: sdir, st: st}
				want := d.damage(t, m)
				before := treeSums(t, sdir)
				args := []string{"--store", "file://" + sdir}
				for _, a := range strings.Fields(c.args) {
					switch a {
					case "P":
						a = d.partition
					case "OFFSETS":
						a = offsets
					}
					args = append(args, a)
				}
				var out, errb bytes.Buffer
				code := cmd.Execute(context.Background(), args, &out, &errb)
				text := out.String() + errb.String()
				if code != c.code {
					t.Fatalf("nereusctl %s: exit %d, want %d\n%s", strings.Join(args[2:], " "), code, c.code, text)
				}
				if c.code != 0 && !strings.Contains(text, want) {
					t.Fatalf("nereusctl %s: exit %d but the output does not name %q:\n%s", strings.Join(args[2:], " "), code, want, text)
				}
				if !c.mutate || c.code == 0 {
					return
				}
				after := treeSums(t, sdir)
				if strings.Contains(c.args, "--all") || strings.HasPrefix(c.args, "gc") {
					// A run over every partition acts on the healthy ones:
					// the damaged partition's keys stay as they were.
					b, _, err := layout.LoadBinding(context.Background(), st, strings.Split(d.partition, "-")[0], 0)
					if err != nil {
						b = nil
					}
					var keep []string
					if b != nil {
						keep = []string{layout.StreamPrefix(b.StreamID), layout.BindingKey(b.Topic, b.Partition)}
					}
					before, after = filterSums(before, keep), filterSums(after, keep)
				}
				if diff := diffSums(before, after); len(diff) > 0 {
					t.Fatalf("nereusctl %s refused (exit %d) but changed the store: %v\n%s", strings.Join(args[2:], " "), code, diff, text)
				}
			})
		}
	}
}

func filterSums(m map[string]string, prefixes []string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}
