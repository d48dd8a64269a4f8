// Package bundle owns `support-bundle`: a tar.gz of what an engineer needs
// to diagnose a store without its data — the layout documents (bindings,
// heads, generation manifests, quarantine records, leases, retention
// progress, the store probe result), the listings of each stream (keys and
// sizes), each checkpoint's header and section table, and what the
// command adds (the version, the redacted config, command outputs), with a
// MANIFEST listing every file.
//
// It never puts record data in a bundle: no byte of a data object (.kb),
// a compacted view (.ntc2) or a checkpoint's sections (.nkc1), no record
// key or value. Only JSON documents are copied from the store, each
// checked to be one before it is added; a checkpoint contributes the
// footer (header copy and section table: ids, lengths, digests) read with
// one ranged GET of its tail. It only reads the store.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/store"
)

// File is one file of a bundle.
type File struct {
	Name string // the path in the archive
	What string // what it is, for the MANIFEST
	Data []byte
}

// ErrRecordData names a file a bundle must never hold.
var ErrRecordData = errors.New("record data is never put in a support bundle")

// maxDocument bounds a document copied from the store.
const maxDocument = 16 << 20

// forbidden reports names of the store's data files.
func forbidden(name string) bool {
	for _, ext := range []string{".kb", ".ntc2", ".nkc1"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// Collect reads the documents of the partitions tps (every binding of the
// store when tps is empty) and the store-wide ones. A document that does
// not decode is still copied (it is evidence) when it is JSON; one that is
// not JSON is left out and named in the returned notes.
func Collect(ctx context.Context, st store.Store, tps []layout.TopicPartition) ([]File, []string, error) {
	c := &collector{st: st}
	if len(tps) == 0 {
		all, err := layout.ListBindings(ctx, st)
		if err != nil {
			return nil, nil, fmt.Errorf("support bundle: list bindings: %w", err)
		}
		tps = all
	}
	for _, tp := range tps {
		if err := c.partition(ctx, tp); err != nil {
			return nil, nil, err
		}
	}
	for _, prefix := range []string{layout.QuarantinePrefix, layout.LeasesPrefix, "tasks/retention/"} {
		if err := c.documents(ctx, prefix, "store document"); err != nil {
			return nil, nil, err
		}
	}
	if err := c.document(ctx, "store-probe.json", "the store probe result"); err != nil {
		return nil, nil, err
	}
	return c.files, c.notes, nil
}

type collector struct {
	st    store.Store
	files []File
	notes []string
	seen  map[string]bool
}

func (c *collector) add(f File) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[f.Name] {
		return
	}
	c.seen[f.Name] = true
	c.files = append(c.files, f)
}

// document copies one JSON document of the store (absent: nothing).
func (c *collector) document(ctx context.Context, key, what string) error {
	if forbidden(key) || !strings.HasSuffix(key, ".json") {
		return fmt.Errorf("support bundle: %s: %w", key, ErrRecordData)
	}
	data, err := c.st.Get(ctx, key, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("support bundle: read %s: %w", key, err)
	}
	if len(data) > maxDocument || !json.Valid(data) {
		c.notes = append(c.notes, fmt.Sprintf("%s: %d bytes that are not a JSON document: left out", key, len(data)))
		return nil
	}
	c.add(File{Name: "store/" + key, What: what, Data: data})
	return nil
}

// documents copies the JSON documents under prefix.
func (c *collector) documents(ctx context.Context, prefix, what string) error {
	infos, err := c.st.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("support bundle: list %s: %w", prefix, err)
	}
	for _, in := range infos {
		if !strings.HasSuffix(in.Key, ".json") {
			c.notes = append(c.notes, fmt.Sprintf("%s: not a document: left out", in.Key))
			continue
		}
		if err := c.document(ctx, in.Key, what); err != nil {
			return err
		}
	}
	return nil
}

// listingEntry is one key of a stream's listing.
type listingEntry struct {
	Key      string    `json:"key"`
	Size     int64     `json:"size"`
	ETag     string    `json:"etag,omitempty"`
	Modified time.Time `json:"modified"`
}

// checkpointFooter is what a bundle keeps of a checkpoint.
type checkpointFooter struct {
	Key      string             `json:"key"`
	Size     int64              `json:"size"`
	Version  int                `json:"version"`
	Root     string             `json:"root"`
	Sections []nkc1.SectionInfo `json:"sections"`
	Error    string             `json:"error,omitempty"`
}

func (c *collector) partition(ctx context.Context, tp layout.TopicPartition) error {
	key := layout.BindingKey(tp.Topic, tp.Partition)
	if err := c.document(ctx, key, "binding"); err != nil {
		return err
	}
	b, _, err := layout.LoadBinding(ctx, c.st, tp.Topic, tp.Partition)
	if err != nil {
		// The raw binding (if any) is in; nothing more can be found.
		c.notes = append(c.notes, fmt.Sprintf("%s: %v", tp, err))
		return nil
	}
	sid := b.StreamID
	if err := c.document(ctx, layout.HeadKey(sid), "stream head"); err != nil {
		return err
	}
	if err := c.documents(ctx, layout.GenerationsPrefix(sid), "generation manifest"); err != nil {
		return err
	}
	if err := c.documents(ctx, layout.CompactionTaskPrefix(sid), "compaction task"); err != nil {
		return err
	}
	if err := c.document(ctx, layout.DeletionKey(sid), "deletion record"); err != nil {
		return err
	}
	infos, err := c.st.List(ctx, layout.StreamPrefix(sid))
	if err != nil {
		return fmt.Errorf("support bundle: list %s: %w", layout.StreamPrefix(sid), err)
	}
	listing := make([]listingEntry, 0, len(infos))
	var footers []checkpointFooter
	for _, in := range infos {
		listing = append(listing, listingEntry{Key: in.Key, Size: in.Size, ETag: in.ETag, Modified: in.Modified})
		if strings.HasPrefix(in.Key, layout.CheckpointsPrefix(sid)) && strings.HasSuffix(in.Key, ".nkc1") {
			footers = append(footers, c.footer(ctx, in))
		}
	}
	data, err := json.MarshalIndent(listing, "", "  ")
	if err != nil {
		return err
	}
	c.add(File{Name: "streams/" + sid + "/listing.json", What: fmt.Sprintf("the listing of stream %s (%s): keys and sizes", sid, tp), Data: data})
	if footers == nil {
		footers = []checkpointFooter{}
	}
	data, err = json.MarshalIndent(footers, "", "  ")
	if err != nil {
		return err
	}
	c.add(File{Name: "streams/" + sid + "/checkpoints.json", What: fmt.Sprintf("the header and section table of each checkpoint of %s", tp), Data: data})
	return nil
}

// footer reads a checkpoint's footer with a ranged GET of its tail.
func (c *collector) footer(ctx context.Context, in store.ObjectInfo) checkpointFooter {
	f := checkpointFooter{Key: in.Key, Size: in.Size, Sections: []nkc1.SectionInfo{}}
	n := min(in.Size, nkc1.SuggestedTailRead)
	tail, err := c.st.Get(ctx, in.Key, &store.Range{Offset: in.Size - n, Length: n})
	if err == nil {
		var ft *nkc1.Footer
		if ft, err = nkc1.OpenFooter(tail, in.Size); err == nil {
			f.Sections, f.Version, f.Root = ft.Sections(), ft.Version(), ft.Root()
		}
	}
	if err != nil {
		f.Error = err.Error()
	}
	return f
}

// Write writes files as a tar.gz to w, MANIFEST first: one line per file,
// its name, size, SHA-256 and what it is. It refuses a file of record data
// by name (nothing is written then: the caller writes to a temporary
// file). The archive is deterministic for the same files and time.
func Write(w io.Writer, files []File, created time.Time) error {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	var man bytes.Buffer
	fmt.Fprintf(&man, "nereusctl support bundle, created %s\n", created.UTC().Format(time.RFC3339))
	fmt.Fprintf(&man, "No record data: no data object, compacted view or checkpoint bytes, no record key or value; credentials redacted.\n\n")
	fmt.Fprintf(&man, "%-64s  %10s  %-64s  %s\n", "FILE", "BYTES", "SHA256", "WHAT")
	for _, f := range files {
		if forbidden(f.Name) || strings.Contains(f.Name, "..") || path.IsAbs(f.Name) {
			return fmt.Errorf("support bundle: %s: %w", f.Name, ErrRecordData)
		}
		sum := sha256.Sum256(f.Data)
		fmt.Fprintf(&man, "%-64s  %10d  %s  %s\n", f.Name, len(f.Data), hex.EncodeToString(sum[:]), f.What)
	}
	gz := gzip.NewWriter(w)
	gz.ModTime = created
	tw := tar.NewWriter(gz)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: "nereusctl-support/" + name, Mode: 0o600, Size: int64(len(data)), ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := put("MANIFEST", man.Bytes()); err != nil {
		return err
	}
	for _, f := range files {
		if err := put(f.Name, f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
