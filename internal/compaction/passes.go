package compaction

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/store"
)

// run is steps 2-3. Each pass fills the offset map from the frozen sources
// starting at lo until the map is full (or the range ends) at x, then
// cleans [Base, x): the previous pass's output (spilled) and the sources in
// [lo, x), keeping a record unless the map has a later offset for its key
// and dropping tombstones whose delete horizon passed. This is Kafka's
// cleaner loop; with enough memory it is one pass. For the records of
// [lo, x) themselves the map is first turned into the sorted list of its
// offsets (latestOffsets), checked in offset order.
func (p *Plan) run(ctx context.Context, st store.Store, o Options, em *emitter, stats *Stats) error {
	em.base = p.Base
	lo := p.Base
	var spill *spillFile
	defer func() {
		if spill != nil {
			spill.remove()
		}
	}()
	var hs [][2]uint64 // the key hashes of a run of rows
	for {
		stats.Passes++
		m := newOffsetMap(o.MaxMemory)
		x := p.End
		err := p.iterate(ctx, st, lo, p.End, nil, func(rows []ntc2.Row) error {
			hs = hs[:0]
			for i := range rows {
				hs = append(hs, keyHash(rows[i].Key))
			}
			m.prefetch(hs)
			for i, h := range hs {
				if !m.put(h, rows[i].Offset) {
					x = rows[i].Offset
					return errStop
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
		if x == lo {
			return fmt.Errorf("the offset map (%d bytes, --max-memory) cannot hold a single key", o.MaxMemory)
		}
		stats.MapBytes = max(stats.MapBytes, m.peakBytes())
		final := x == p.End
		var next *spillFile
		emit := func(r *ntc2.Row) error { return em.add(ctx, r) }
		if !final {
			if next, err = newSpill(o.TempDir); err != nil {
				return err
			}
			emit = next.write
		}
		keepRow := func(r *ntc2.Row, superseded bool) error {
			if superseded {
				if final {
					stats.Superseded++
				}
				return nil
			}
			if r.Value == nil {
				switch {
				case r.DeleteHorizonMs < 0:
					// First kept: the horizon starts now (Kafka sets
					// deleteHorizonMs when it first retains a tombstone).
					r.DeleteHorizonMs = p.Params.NowMs + p.Params.DeleteRetentionMs
				case p.Params.NowMs >= r.DeleteHorizonMs:
					if final {
						stats.TombstonesDropped++
					}
					return nil
				}
				if final {
					stats.TombstonesKept++
				}
			}
			if final {
				stats.RowsOut++
			}
			return emit(r)
		}
		// The previous passes' output, below lo: superseded when the map
		// holds a later offset of its key.
		if spill != nil {
			err := spill.each(func(r *ntc2.Row) error {
				latest, ok := m.get(keyHash(r.Key))
				return keepRow(r, ok && r.Offset < latest)
			})
			if err != nil {
				return err
			}
			spill.remove()
			spill = nil
		}
		// Records in [lo, x): every one of them is in the map, so one is
		// the latest of its key exactly when its offset is a value of the
		// map. They come in offset order: walk the sorted values along.
		latest := m.latestOffsets()
		j := 0
		keep := func(rows []ntc2.Row) error {
			for i := range rows {
				o := uint64(rows[i].Offset) + 1
				for j < len(latest) && latest[j] < o {
					j++
				}
				if err := keepRow(&rows[i], j == len(latest) || latest[j] != o); err != nil {
					return err
				}
			}
			return nil
		}
		// Records in [lo, x) are read, counted and judged exactly once.
		if err := p.iterate(ctx, st, lo, x, stats, keep); err != nil {
			return err
		}
		if final {
			return em.flush(ctx, p.End)
		}
		if err := next.close(); err != nil {
			return err
		}
		spill, lo = next, x
	}
}

// spillFile holds a pass's output rows between passes, in a local temp file.
type spillFile struct {
	f        *os.File
	w        *bufio.Writer
	unlinked bool // its name is gone already: nothing to remove
}

// spillPrefix starts every spill file's name (in --temp-dir, else the
// system's temp folder), with the process id after it.
const spillPrefix = "nereusctl-compact-"

// spillLeftoverAge is how old a spill file that could not be unlinked at
// once (a platform that keeps open files' names) must be before a later
// compaction removes it as a killed run's leftover.
const spillLeftoverAge = 24 * time.Hour

// newSpill creates the pass's spill file and at once removes its name
// (the open file lives on until closed), so no kill, SIGKILL included,
// can leave it behind: it holds record keys and values, which must not
// outlive the run in a shared temp folder. Where the platform cannot
// remove an open file's name, the file is removed when the pass ends, and
// a later compaction removes a killed run's leftovers (spillPrefix, older
// than spillLeftoverAge).
func newSpill(dir string) (*spillFile, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	removeSpillLeftovers(dir, time.Now())
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-*.spill", spillPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("compaction spill: %w", err)
	}
	s := &spillFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	s.unlinked = os.Remove(f.Name()) == nil
	return s, nil
}

// removeSpillLeftovers removes spill files in dir older than
// spillLeftoverAge (best effort).
func removeSpillLeftovers(dir string, now time.Time) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), spillPrefix) || !strings.HasSuffix(e.Name(), ".spill") || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > spillLeftoverAge {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func (s *spillFile) write(r *ntc2.Row) error {
	var b []byte
	b = binary.AppendVarint(b, r.Offset)
	b = binary.AppendVarint(b, r.Timestamp)
	b = append(b, byte(r.TimestampType))
	b = binary.AppendVarint(b, r.DeleteHorizonMs)
	b = appendBytes(b, r.Key)
	b = appendBytes(b, r.Value)
	b = binary.AppendUvarint(b, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		b = appendBytes(b, []byte(h.Key))
		b = appendBytes(b, h.Value)
	}
	var n [binary.MaxVarintLen64]byte
	if _, err := s.w.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))]); err != nil {
		return err
	}
	_, err := s.w.Write(b)
	return err
}

// appendBytes writes a nullable byte string: length+1 (0 = null), bytes.
func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

func (s *spillFile) close() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	_, err := s.f.Seek(0, io.SeekStart)
	return err
}

func (s *spillFile) remove() {
	s.f.Close()
	if !s.unlinked {
		os.Remove(s.f.Name())
	}
}

// each reads the rows back in order.
func (s *spillFile) each(fn func(*ntc2.Row) error) error {
	br := bufio.NewReaderSize(s.f, 1<<20)
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read spill: %w", err)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return fmt.Errorf("read spill: %w", err)
		}
		r, err := decodeSpillRow(b)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
}

func decodeSpillRow(b []byte) (*ntc2.Row, error) {
	bad := errors.New("corrupt spill row")
	r := &ntc2.Row{}
	var n int
	varint := func() int64 {
		v, k := binary.Varint(b)
		if k <= 0 {
			n = -1
			return 0
		}
		b = b[k:]
		return v
	}
	bytesField := func() []byte {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k)+1 {
			n = -1
			return nil
		}
		b = b[k:]
		if l == 0 {
			return nil
		}
		v := append([]byte{}, b[:l-1]...)
		b = b[l-1:]
		return v
	}
	r.Offset = varint()
	r.Timestamp = varint()
	if len(b) < 1 {
		return nil, bad
	}
	r.TimestampType = kafka.TimestampType(b[0])
	b = b[1:]
	r.DeleteHorizonMs = varint()
	r.Key = bytesField()
	r.Value = bytesField()
	hn, k := binary.Uvarint(b)
	if k <= 0 || hn > uint64(len(b)) {
		return nil, bad
	}
	b = b[k:]
	for i := uint64(0); i < hn; i++ {
		key := bytesField()
		val := bytesField()
		r.Headers = append(r.Headers, kafka.RecordHeader{Key: string(key), Value: val})
	}
	if n < 0 || len(b) != 0 {
		return nil, bad
	}
	return r, nil
}
