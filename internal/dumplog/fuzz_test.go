package dumplog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// FuzzDumpBatch dumps arbitrary bytes as one batch with every option on.
// No panic; a line for the batch that shows its header; its isvalid agrees
// with the batch's CRC (a bad CRC is never shown valid); and the dump's
// error says invalid exactly when a batch line says so.
func FuzzDumpBatch(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixtureRoot, "kafka-uncompacted", "__consumer_offsets-18", "00000000000000000000.log"))
	if err != nil {
		f.Fatal(err)
	}
	sc := kafka.NewScanner(seed)
	for i := 0; i < 5 && sc.Next(); i++ {
		f.Add(append([]byte(nil), sc.Batch()...))
	}
	m, _ := kafka.MarkerBatch(10, 1, 5, 1, false, 3, 1000)
	f.Add(m)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := kafka.ParseHeader(b)
		if err != nil || h.Size() != len(b) {
			return
		}
		crcOK := kafka.VerifyCRC(b) == nil
		for _, dec := range []Decoder{DecoderOffsets, DecoderTxn, DecoderNone} {
			var batches, invalid int
			_, err := Run(context.Background(), sliceSource{[][]byte{b}}, Options{From: -1, Deep: true, Decoder: dec, VerifyCRC: true}, func(l Line) error {
				l.AppendLine(nil)
				bl, ok := l.(*BatchLine)
				if !ok {
					return nil
				}
				batches++
				if bl.BaseOffset != h.BaseOffset || bl.LastOffset != h.LastOffset() || bl.Count != h.RecordsCount {
					t.Fatalf("batch line %d..%d count %d for header %d..%d count %d",
						bl.BaseOffset, bl.LastOffset, bl.Count, h.BaseOffset, h.LastOffset(), h.RecordsCount)
				}
				if bl.Valid == nil {
					t.Fatal("isvalid unchecked under --deep")
				}
				if *bl.Valid && !crcOK {
					t.Fatal("a batch with a bad CRC shown as valid")
				}
				if !*bl.Valid {
					invalid++
				}
				return nil
			})
			if batches == 0 && h.LastOffset() < 100 {
				t.Fatalf("no line for the batch (err %v)", err)
			}
			if (invalid > 0) != errors.Is(err, ErrInvalid) {
				t.Fatalf("%d invalid batch lines, dump error %v", invalid, err)
			}
		}
	})
}
