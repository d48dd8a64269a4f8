package demo

import (
	"fmt"
	"math/rand/v2"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// generator produces one partition's batches in offset order, with the
// producer bookkeeping a real client and broker would do.
type generator struct {
	kind, topic string
	partition   int32
	partitions  int32 // the topic's partition count (the coordinator topics' rule)
	total, made int
	rng         *rand.Rand
	clock       int64 // ms
	step        int64 // mean ms between records
	leaderEpoch int32
	nbatch      int

	producers []*producer
	// transactional state
	openTxn   map[int64]int // producer id -> data batches written in its txn
	coordEp   int32
	leftOpen  bool // partition 0's open transaction was left open
	keys      int  // compacted key space
	internalN int  // records of internal topics made
	scale     int  // batches per object multiplier for large demos
	// batchRecords, when > 0, sizes the user topics' batches as a busy
	// producer fills them: batchRecords/2+1 to batchRecords records.
	batchRecords int
}

type producer struct {
	id    int64
	epoch int16
	seq   int32
	txnID string
}

func newGenerator(kind, topic string, p int32, records int, rng *rand.Rand) *generator {
	g := &generator{kind: kind, topic: topic, partition: p, total: records, rng: rng, clock: Epoch0.UnixMilli(), openTxn: map[int64]int{}}
	if records > 0 {
		g.step = max(1, Span.Milliseconds()/int64(records))
	}
	base := int64(1000*(1+len(kind))) + int64(p)*100
	switch kind {
	case "idempotent":
		for i := 0; i < 3; i++ {
			g.producers = append(g.producers, &producer{id: base + int64(i)})
		}
	case "transactional":
		for i := 0; i < 2; i++ {
			g.producers = append(g.producers, &producer{id: base + int64(i), txnID: fmt.Sprintf("payments-tx-%d-%d", p, i)})
		}
	case "compacted":
		g.keys = max(8, records/5)
	}
	return g
}

func (g *generator) done() bool {
	return g.made >= g.total && len(g.openTxn) == 0
}

// tick advances the clock by about one record's worth of time.
func (g *generator) tick() int64 {
	g.clock += g.step/2 + g.rng.Int64N(g.step+1)
	return g.clock
}

// epochFor moves the leader epoch as the partition fills: 0, 1, 2, then 4
// (a skipped epoch, as after an unclean election).
func (g *generator) epochFor() int32 {
	f := float64(g.made) / float64(max(g.total, 1))
	switch {
	case f >= 0.85:
		g.leaderEpoch = 4
	case f >= 0.65:
		g.leaderEpoch = 2
	case f >= 0.30:
		g.leaderEpoch = 1
	}
	return g.leaderEpoch
}

// nextObject returns the batches of the next object starting at next and
// the number of data records in them.
func (g *generator) nextObject(next int64) ([][]byte, int, error) {
	nb := 1 + g.rng.IntN(4*max(g.scale, 1))
	var out [][]byte
	records := 0
	for i := 0; i < nb && !g.done(); i++ {
		b, n, err := g.nextBatch(next)
		if err != nil {
			return nil, 0, err
		}
		if b == nil {
			continue
		}
		h, err := kafka.ParseHeader(b)
		if err != nil {
			return nil, 0, err
		}
		next = h.LastOffset() + 1
		out = append(out, b)
		records += n
	}
	return out, records, nil
}

func (g *generator) nextBatch(base int64) ([]byte, int, error) {
	g.nbatch++
	switch g.kind {
	case "idempotent":
		return g.idempotentBatch(base)
	case "transactional":
		return g.txnBatch(base)
	case "compacted":
		return g.compactedBatch(base)
	default:
		return g.internalBatch(base)
	}
}

// dataCount is the records of a user topic's next batch: up to maxN, or
// the busy producer's batchRecords.
func (g *generator) dataCount(maxN int) int {
	if g.batchRecords > 0 {
		half := g.batchRecords / 2
		return min(half+1+g.rng.IntN(g.batchRecords-half), max(g.total-g.made, 1))
	}
	return g.count(maxN)
}

func (g *generator) count(maxN int) int {
	return min(1+g.rng.IntN(maxN), max(g.total-g.made, 1))
}

func (g *generator) value(n int) []byte {
	b := make([]byte, n)
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return b
}

func (g *generator) records(base int64, n int, key func(i int) []byte, val func(i int) []byte) []kafka.Record {
	recs := make([]kafka.Record, n)
	for i := range recs {
		recs[i] = kafka.Record{Offset: base + int64(i), Timestamp: g.tick(), Key: key(i), Value: val(i)}
		if g.rng.IntN(8) == 0 {
			recs[i].Headers = []kafka.RecordHeader{{Key: "trace-id", Value: g.value(16)}}
		}
	}
	return recs
}

func (g *generator) idempotentBatch(base int64) ([]byte, int, error) {
	pr := g.producers[g.rng.IntN(len(g.producers))]
	// Halfway through, the first producer restarts with a bumped epoch.
	if pr == g.producers[0] && pr.epoch == 0 && g.made > g.total/2 {
		pr.epoch, pr.seq = 1, 0
	}
	n := g.dataCount(20)
	recs := g.records(base, n, func(i int) []byte { return []byte(fmt.Sprintf("order-%d", g.made+i)) },
		func(i int) []byte {
			return append([]byte(`{"item":"`), append(g.value(60+g.rng.IntN(120)), '"', '}')...)
		})
	s := kafka.NewBatchSpec(base, recs)
	s.PartitionLeaderEpoch = g.epochFor()
	s.Codec = codecs[g.nbatch%len(codecs)]
	s.ProducerID, s.ProducerEpoch, s.BaseSequence = pr.id, pr.epoch, pr.seq
	pr.seq = kafka.IncrementSequence(pr.seq, int32(n))
	g.made += n
	b, err := kafka.EncodeBatch(s)
	return b, n, err
}

func (g *generator) txnBatch(base int64) ([]byte, int, error) {
	if g.made >= g.total {
		// Only closing markers remain. Partition 0 leaves its first
		// producer's transaction open on purpose: an ongoing transaction
		// holds the LSO below the HW.
		p0 := g.producers[0]
		if g.partition == 0 && !g.leftOpen {
			g.leftOpen = true
			if g.openTxn[p0.id] == 0 {
				// Open one more transaction, to leave open.
				b, n, err := g.txnData(base, p0)
				delete(g.openTxn, p0.id)
				return b, n, err
			}
			delete(g.openTxn, p0.id)
		}
		for _, q := range g.producers {
			if g.openTxn[q.id] > 0 {
				return g.marker(base, q)
			}
		}
		return nil, 0, nil
	}
	pr := g.producers[g.rng.IntN(len(g.producers))]
	if n := g.openTxn[pr.id]; n > 0 && n >= 1+g.rng.IntN(3) {
		return g.marker(base, pr)
	}
	return g.txnData(base, pr)
}

// txnData writes one transactional data batch of pr, opening its
// transaction if none is open.
func (g *generator) txnData(base int64, pr *producer) ([]byte, int, error) {
	n := g.dataCount(10)
	recs := g.records(base, n, func(i int) []byte { return []byte(fmt.Sprintf("payment-%d", g.made+i)) },
		func(i int) []byte { return g.value(80 + g.rng.IntN(80)) })
	s := kafka.NewBatchSpec(base, recs)
	s.PartitionLeaderEpoch = g.epochFor()
	s.Codec = codecs[(g.nbatch/3)%len(codecs)]
	s.Transactional = true
	s.ProducerID, s.ProducerEpoch, s.BaseSequence = pr.id, pr.epoch, pr.seq
	pr.seq = kafka.IncrementSequence(pr.seq, int32(n))
	g.openTxn[pr.id]++
	g.made += n
	b, err := kafka.EncodeBatch(s)
	return b, n, err
}

// marker ends pr's open transaction: a COMMIT four times in five, else an
// ABORT, after which the second producer is once fenced with a new epoch.
func (g *generator) marker(base int64, pr *producer) ([]byte, int, error) {
	commit := g.rng.IntN(5) != 0
	if g.made > g.total*3/4 {
		g.coordEp = 1
	}
	b, err := kafka.MarkerBatch(base, g.epochFor(), pr.id, pr.epoch, commit, g.coordEp, g.tick())
	delete(g.openTxn, pr.id)
	if !commit && pr == g.producers[1] && pr.epoch == 0 && g.made > g.total/3 {
		pr.epoch, pr.seq = 1, 0
	}
	return b, 0, err
}

func (g *generator) compactedBatch(base int64) ([]byte, int, error) {
	n := g.dataCount(10)
	recs := g.records(base, n, func(i int) []byte { return []byte(fmt.Sprintf("customer-%d", g.rng.IntN(g.keys))) },
		func(i int) []byte {
			if g.rng.IntN(10) == 0 {
				return nil // tombstone
			}
			return append([]byte(`{"name":"`), append(g.value(20+g.rng.IntN(40)), '"', '}')...)
		})
	s := kafka.NewBatchSpec(base, recs)
	s.PartitionLeaderEpoch = g.epochFor()
	if g.nbatch%4 == 0 {
		s.Codec = kafka.CodecZstd
	}
	g.made += n
	b, err := kafka.EncodeBatch(s)
	return b, n, err
}

func (g *generator) internalBatch(base int64) ([]byte, int, error) {
	n := g.count(8)
	recs := make([]kafka.Record, n)
	for i := range recs {
		k, v, err := g.internalRecord()
		if err != nil {
			return nil, 0, err
		}
		recs[i] = kafka.Record{Offset: base + int64(i), Timestamp: g.tick(), Key: k, Value: v}
	}
	s := kafka.NewBatchSpec(base, recs)
	s.PartitionLeaderEpoch = g.epochFor()
	g.made += n
	b, err := kafka.EncodeBatch(s)
	return b, n, err
}
