package compaction

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/ntc2"
	"github.com/nereusctl/nereusctl/internal/state"
	"github.com/nereusctl/nereusctl/internal/store"
)

// ErrSourceChanged is returned when a frozen source generation or one of
// its objects no longer has the digest recorded at freeze time.
var ErrSourceChanged = errors.New("compaction source changed")

// errStop ends an iteration early.
var errStop = errors.New("stop")

// source is a frozen source generation with its manifest.
type source struct {
	gen    *layout.Generation
	sha256 string
}

// abortIndex answers "is this transactional batch part of an aborted
// transaction" from the replayed aborted ranges.
type abortIndex map[int64][]state.AbortedTxn

func newAbortIndex(aborted []layout.AbortedRange) abortIndex {
	ix := abortIndex{}
	for _, a := range aborted {
		ix[a.ProducerID] = append(ix[a.ProducerID], state.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset})
	}
	for pid := range ix {
		sort.Slice(ix[pid], func(i, j int) bool { return ix[pid][i].FirstOffset < ix[pid][j].FirstOffset })
	}
	return ix
}

// aborted reports a transactional batch of pid starting at base inside one
// of pid's aborted transactions [first, marker].
func (ix abortIndex) aborted(pid, base int64) bool {
	rs := ix[pid]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].FirstOffset > base }) - 1
	return i >= 0 && base <= rs[i].LastOffset
}

// Stats count what a compaction read, dropped and wrote.
type Stats struct {
	SourceObjects     int   `json:"source_objects"`
	BytesIn           int64 `json:"bytes_in"`
	RecordsIn         int64 `json:"records_in"`
	AbortedDropped    int64 `json:"aborted_dropped"`
	ControlDropped    int64 `json:"control_dropped"`
	KeylessDropped    int64 `json:"keyless_dropped"`
	BelowLogStart     int64 `json:"below_log_start_dropped"`
	Superseded        int64 `json:"superseded_dropped"`
	TombstonesKept    int64 `json:"tombstones_kept"`
	TombstonesDropped int64 `json:"tombstones_dropped"`
	RowsOut           int64 `json:"rows_out"`
	Keys              int64 `json:"keys"`
	BytesOut          int64 `json:"bytes_out"`
	Objects           int   `json:"objects_out"`
	Passes            int   `json:"passes"`
	MapBytes          int64 `json:"offset_map_bytes"`
}

// iterate calls fn with every retained record of the frozen sources with
// an offset in [lo, hi), in offset order and in runs (a batch's records, a
// block's rows): rows of the previous compacted set below its end, then
// records of the new COMMITTED generations. Every object read is checked
// against the digest its manifest recorded. Control batches, aborted
// transactional data, keyless records and records below the log start are
// dropped (and counted when stats is not nil). The rows and their bytes
// are valid until fn returns: fn copies what it keeps.
func (p *Plan) iterate(ctx context.Context, st store.Store, lo, hi int64, stats *Stats, fn func(rows []ntc2.Row) error) error {
	lo = max(lo, p.Base)
	for _, src := range p.prev {
		for _, o := range src.gen.Objects {
			if o.End <= lo || o.Base >= min(hi, p.PrevEnd) {
				continue
			}
			data, err := p.readObject(ctx, st, o, stats)
			if err != nil {
				return err
			}
			r, err := ntc2.Open(data)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrSourceChanged, o.Key, err)
			}
			for i, blocks := 0, r.Footer().Blocks; i < blocks; i++ {
				rows, err := r.Block(i)
				if err != nil {
					return fmt.Errorf("%w: %s: %v", ErrSourceChanged, o.Key, err)
				}
				// Rows ascend: keep the run inside [lo, min(hi, PrevEnd)).
				a := sort.Search(len(rows), func(j int) bool { return rows[j].Offset >= lo })
				b := sort.Search(len(rows), func(j int) bool { return rows[j].Offset >= min(hi, p.PrevEnd) })
				if a >= b {
					continue
				}
				if stats != nil {
					stats.RecordsIn += int64(b - a)
				}
				if err := fn(rows[a:b]); err != nil {
					return err
				}
			}
		}
	}
	from := max(lo, p.PrevEnd)
	dec := p.decoder()
	for _, src := range p.new {
		for _, o := range src.gen.Objects {
			if o.End <= from || o.Base >= hi {
				continue
			}
			data, err := p.readObject(ctx, st, o, stats)
			if err != nil {
				return err
			}
			sc := kafka.NewScannerVerify(data)
			for sc.Next() {
				h := sc.HeaderPtr()
				if h.LastOffset() < from || h.BaseOffset >= hi {
					continue
				}
				if h.IsControl() {
					if stats != nil {
						stats.ControlDropped += int64(h.RecordsCount)
					}
					continue
				}
				if h.IsTransactional() && h.ProducerID >= 0 && p.aborts.aborted(h.ProducerID, h.BaseOffset) {
					if stats != nil {
						stats.AbortedDropped += int64(h.RecordsCount)
					}
					continue
				}
				b, err := dec.Decode(sc.Batch(), true)
				if err != nil {
					return fmt.Errorf("decode batch at offset %d in %s: %w", h.BaseOffset, o.Key, err)
				}
				horizon := b.Header.DeleteHorizonMs()
				tsType := b.Header.TimestampType()
				rows := p.rows[:0]
				for i := range b.Records {
					rec := &b.Records[i]
					if rec.Offset < from || rec.Offset >= hi {
						continue
					}
					if stats != nil {
						stats.RecordsIn++
					}
					switch {
					case rec.Offset < p.LogStart:
						if stats != nil {
							stats.BelowLogStart++
						}
						continue
					case rec.Key == nil:
						if stats != nil {
							stats.KeylessDropped++
						}
						continue
					}
					row := ntc2.Row{Offset: rec.Offset, Timestamp: rec.Timestamp, TimestampType: tsType, Key: rec.Key, Value: rec.Value, Headers: rec.Headers, DeleteHorizonMs: -1}
					if rec.Value == nil && horizon >= 0 {
						row.DeleteHorizonMs = horizon
					}
					rows = append(rows, row)
				}
				p.rows = rows
				if len(rows) > 0 {
					if err := fn(rows); err != nil {
						return err
					}
				}
			}
			if err := sc.Err(); err != nil {
				return fmt.Errorf("scan %s: %w", o.Key, err)
			}
		}
	}
	return nil
}

// decoder returns the plan's batch decoder (its buffers are reused across
// every batch the compaction reads; rows handed to fn alias them until fn
// returns).
func (p *Plan) decoder() *kafka.BatchDecoder {
	if p.dec == nil {
		p.dec = kafka.NewBatchDecoder(kafka.DefaultLimits())
	}
	return p.dec
}

// fingerprint is a keyed 64-bit hash of an object's bytes under a seed
// drawn at random per process: no change can be crafted to keep it (the
// seed never leaves memory), and a random one keeps it with probability
// 2^-64.
type fingerprint uint64

var fingerprintSeed = maphash.MakeSeed()

func fingerprintOf(data []byte) fingerprint {
	return fingerprint(maphash.Bytes(fingerprintSeed, data))
}

// readObject GETs a source object and checks it against its manifest: the
// first read of an object in this compaction hashes it with SHA-256 and
// compares with the digest its manifest recorded; every later read (step
// 3's re-read, later passes) must be byte-identical to that verified read,
// which a keyed fingerprint taken then proves at memory speed. Any
// difference is ErrSourceChanged naming the object.
func (p *Plan) readObject(ctx context.Context, st store.Store, o layout.ObjectRef, stats *Stats) ([]byte, error) {
	// One buffer serves every read: the object's rows are handed on and
	// done with before the next object is read.
	data, err := store.GetInto(ctx, st, o.Key, p.objBuf)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: object %s is gone: %v", ErrSourceChanged, o.Key, err)
		}
		return nil, fmt.Errorf("read source %s: %w", o.Key, err)
	}
	if cap(data) <= 64<<20 {
		p.objBuf = data
	}
	if p.verified == nil {
		p.verified = map[string]fingerprint{}
	}
	if fp, ok := p.verified[o.Key]; ok {
		if fingerprintOf(data) != fp {
			return nil, fmt.Errorf("%w: object %s changed since this compaction read it (its manifest recorded sha256 %s)", ErrSourceChanged, o.Key, o.SHA256)
		}
	} else {
		if got := store.SHA256Of(data); got != o.SHA256 {
			return nil, fmt.Errorf("%w: object %s has sha256 %s, its manifest recorded %s", ErrSourceChanged, o.Key, got, o.SHA256)
		}
		p.verified[o.Key] = fingerprintOf(data)
	}
	if stats != nil {
		stats.SourceObjects++
		stats.BytesIn += int64(len(data))
	}
	return data, nil
}
