package stream

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Read-ahead bounds for ReadChain: at most ReadAheadObjects reads in
// flight, and no new one started while the objects in flight add up to
// ReadAheadBytes (one is always allowed). A tail shorter than the bound is
// read all at once: on S3 a restart's tail of a few dozen small objects is
// one round of requests. Chains read at once (a command over many
// partitions) share ReadAheadTotal reads, each keeping at least
// ReadAheadMin in flight: a fleet's memory and connections stay what the
// partitions in flight need, not 64 reads each.
const (
	ReadAheadObjects = 64
	ReadAheadMin     = 8
	ReadAheadTotal   = 256
	ReadAheadBytes   = 4 << 20
)

// activeChains counts the ReadChain calls under way in the process.
var activeChains atomic.Int64

// window is how many reads a chain keeps in flight now.
func window() int {
	return max(ReadAheadMin, min(ReadAheadObjects, ReadAheadTotal/int(max(1, activeChains.Load()))))
}

// keptBufferBytes bounds the read buffers ReadChain keeps for reuse.
const keptBufferBytes = 2 * ReadAheadBytes

// ReadChain reads the objects of chain (ReadObjectInto, each checked
// against its listed size) and calls fn with each one's bytes, in chain
// order, keeping up to ReadAheadObjects reads (and ReadAheadBytes; fewer
// while other chains are read: ReadAheadTotal) in flight: on S3, where a request costs tens of milliseconds, a tail of n
// objects costs about n/64 round trips instead of n. data is valid until
// fn returns (its buffer is reused). The first error, a read's or fn's,
// ends the chain: reads after it are cancelled (and waited for) and fn is
// not called again.
func ReadChain(ctx context.Context, st store.Store, chain []layout.StreamObject, fn func(o layout.StreamObject, data []byte) error) error {
	if len(chain) <= 1 {
		var buf []byte
		for _, o := range chain {
			data, err := ReadObjectInto(ctx, st, o, buf)
			if err != nil {
				return err
			}
			if err := fn(o, data); err != nil {
				return err
			}
		}
		return nil
	}
	activeChains.Add(1)
	defer activeChains.Add(-1)
	// On return the reads still in flight are cancelled and waited for:
	// none touches the store after the call.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		data []byte
		err  error
	}
	// Buffers handed back by fn, reused newest first, kept up to
	// keptBufferBytes (only this loop touches them).
	var free [][]byte
	kept := 0
	var queue []chan result // reads in flight, in chain order
	var queuedBytes []int64
	inFlight := int64(0)
	next := 0
	for done := 0; done < len(chain); done++ {
		for w := window(); next < len(chain) && len(queue) < w && (len(queue) == 0 || inFlight+chain[next].Size <= ReadAheadBytes); {
			var buf []byte
			if n := len(free); n > 0 {
				buf, free = free[n-1], free[:n-1]
				kept -= cap(buf)
			}
			ch := make(chan result, 1)
			o := chain[next]
			wg.Add(1)
			go func() {
				defer wg.Done()
				data, err := ReadObjectInto(ctx, st, o, buf)
				ch <- result{data, err}
			}()
			queue, queuedBytes = append(queue, ch), append(queuedBytes, o.Size)
			inFlight += o.Size
			next++
		}
		r := <-queue[0]
		inFlight -= queuedBytes[0]
		queue, queuedBytes = queue[1:], queuedBytes[1:]
		if r.err != nil {
			return r.err
		}
		if err := fn(chain[done], r.data); err != nil {
			return err
		}
		if c := cap(r.data); c > 0 && kept+c <= keptBufferBytes {
			free = append(free, r.data[:0])
			kept += c
		}
	}
	return nil
}
