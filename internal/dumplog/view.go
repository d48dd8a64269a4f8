package dumplog

import (
	"context"

	"github.com/nereusctl/nereusctl/internal/compaction"
	"github.com/nereusctl/nereusctl/internal/kafka/coord"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// errFull stops a view walk at --count.
type errFull struct{}

func (errFull) Error() string { return "count reached" }

// RunView emits what a READ_COMMITTED fetch of a compacted partition
// returns, one record line each: the compacted prefix from the NTC2 view
// (batch structure is gone there, so there are no batch lines), then the
// COMMITTED tail with aborted data and control records filtered, up to the
// LSO. A tail record shows its real producer sequence (as kafka-dump-log
// does: the batch's base sequence + its offset delta); a view record -1,
// the compacted view keeping no batch structure. It refuses a partition under QUARANTINED coverage.
func RunView(ctx context.Context, st store.Store, b *layout.Binding, opt Options, emit func(Line) error) (*compaction.ReadInfo, int64, error) {
	var n int64
	from := max(opt.From, 0)
	info, err := compaction.Read(ctx, st, b, from, func(r compaction.Record) error {
		if opt.Filter.Active() && !(opt.Filter.keepTime(r.Timestamp) && opt.Filter.keepKey(r.Key, r.Value)) {
			return nil
		}
		if opt.Count > 0 && n >= opt.Count {
			return errFull{}
		}
		n++
		l := &RecordLine{
			Type: "record", Offset: r.Offset, Timestamp: r.Timestamp, TimestampType: r.TimestampType.String(),
			KeySize: nullableLen(r.Key), ValueSize: nullableLen(r.Value), Sequence: r.Sequence,
			Key: r.Key, Value: r.Value, Headers: []Header{}, Source: "committed",
			printData: opt.PrintData,
		}
		if r.FromView {
			l.Source = "view"
		}
		for _, h := range r.Headers {
			l.Headers = append(l.Headers, Header{Key: h.Key, Value: h.Value})
		}
		switch opt.Decoder {
		case DecoderOffsets:
			if rec, err := coord.DecodeOffsetsRecord(r.Key, r.Value); err != nil {
				l.DecodeError = err.Error()
			} else {
				l.Decoded, l.decodedText = rec, rec.String()
			}
		case DecoderTxn:
			if rec, err := coord.DecodeTxnRecord(r.Key, r.Value); err != nil {
				l.DecodeError = err.Error()
			} else {
				l.Decoded, l.decodedText = rec, rec.String()
			}
		}
		return emit(l)
	})
	if _, ok := err.(errFull); ok {
		err = nil
	}
	return info, n, err
}
