package dumplog

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// FuzzDumpBatch dumps arbitrary bytes as one batch with every option on:
// no panic, and a line for the batch.
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
		for _, dec := range []Decoder{DecoderOffsets, DecoderTxn, DecoderNone} {
			lines := 0
			_, err := Run(context.Background(), sliceSource{[][]byte{b}}, Options{From: -1, Deep: true, Decoder: dec, VerifyCRC: true}, func(l Line) error {
				lines++
				l.AppendLine(nil)
				return nil
			})
			if lines == 0 && h.LastOffset() < 100 {
				t.Fatalf("no line for the batch (err %v)", err)
			}
		}
	})
}
