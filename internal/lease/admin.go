package lease

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// States of a stored lease (Inspect, List).
const (
	StateLive    = "live"    // not expired, its holder not known to be gone: never broken
	StateExpired = "expired" // past its expiry: any acquirer takes it over
	StateDead    = "dead"    // its holder was a process of this host that no longer exists
	StateCorrupt = "corrupt" // the document does not decode: it blocks every acquirer until broken
)

// Info is a stored lease as an operator sees it.
type Info struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	// Partition is the partition a partition lease is of ("" for a job
	// lease).
	Partition  string `json:"partition,omitempty"`
	Holder     string `json:"holder,omitempty"`
	AcquiredMs int64  `json:"acquired_ms,omitempty"`
	ExpiresMs  int64  `json:"expires_ms,omitempty"`
	State      string `json:"state"`
	// Detail says why a corrupt lease does not decode.
	Detail string `json:"detail,omitempty"`
	etag   string
}

// ErrLive is Break's refusal of a lease a live holder has.
var ErrLive = errkind.New(errkind.Blocked, "the lease has a live holder")

// nameOf is the lease name of a key under leases/ ("" if it is none).
func nameOf(key string) string {
	rest, ok := strings.CutPrefix(key, layout.LeasesPrefix)
	if !ok {
		return ""
	}
	name, ok := strings.CutSuffix(rest, ".json")
	if !ok || name == "" {
		return ""
	}
	return name
}

// Inspect reads the lease name and judges it at now: live, expired, dead
// (its holder a process of this host that is gone) or corrupt (a
// document that does not decode, Detail saying why). A missing lease is
// store.ErrNotFound.
func Inspect(ctx context.Context, st store.Store, name string, now time.Time) (*Info, error) {
	key := layout.LeaseKey(name)
	in := &Info{Name: name, Key: key}
	if tp, ok := PartitionOf(name); ok {
		in.Partition = tp.String()
	}
	data, err := store.GetCapped(ctx, st, key, layout.MaxDocumentBytes)
	if errors.Is(err, store.ErrTooLarge) {
		info, herr := st.Head(ctx, key)
		if herr != nil {
			return nil, fmt.Errorf("read lease %s: %w", key, herr)
		}
		in.State, in.Detail, in.etag = StateCorrupt, fmt.Sprintf("larger than %d bytes", layout.MaxDocumentBytes), info.ETag
		return in, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lease %s: %w", key, err)
	}
	in.etag = store.ETagOf(data)
	var doc layout.Lease
	if err := layout.Decode(key, data, &doc); err != nil {
		in.State, in.Detail = StateCorrupt, err.Error()
		return in, nil
	}
	if doc.Name != name {
		in.State, in.Detail = StateCorrupt, fmt.Sprintf("decode %s: names lease %q", key, doc.Name)
		return in, nil
	}
	in.Holder, in.AcquiredMs, in.ExpiresMs = doc.Holder, doc.AcquiredMs, doc.ExpiresMs
	switch {
	case now.UnixMilli() >= doc.ExpiresMs:
		in.State = StateExpired
	case holderDeadHere(doc.Holder):
		in.State = StateDead
	default:
		in.State = StateLive
	}
	return in, nil
}

// List inspects every lease under leases/, in key order.
func List(ctx context.Context, st store.Store, now time.Time) ([]*Info, error) {
	infos, err := st.List(ctx, layout.LeasesPrefix)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	out := []*Info{}
	for _, obj := range infos {
		name := nameOf(obj.Key)
		if name == "" {
			continue
		}
		in, err := Inspect(ctx, st, name, now)
		if errors.Is(err, store.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return out, err
		}
		out = append(out, in)
	}
	return out, nil
}

// Break deletes the lease name when no live holder has it: expired, its
// holder dead on this host, or corrupt. The delete is guarded by the ETag
// of the bytes judged (If-Match), so a renewal or a takeover meanwhile is
// never broken: it is judged again. A live lease is refused with ErrLive
// (naming its holder and expiry). It returns the lease as judged; nil
// (and no error) when there was none to break.
func Break(ctx context.Context, st store.Store, name string, now time.Time) (*Info, error) {
	for range maxAcquireRounds {
		in, err := Inspect(ctx, st, name, now)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if in.State == StateLive {
			return in, fmt.Errorf("lease break %s: %w: %s until %s (an expired, dead or corrupt lease can be broken; stop that job or wait for its expiry)",
				name, ErrLive, in.Holder, time.UnixMilli(in.ExpiresMs).UTC().Format(time.RFC3339))
		}
		err = st.Delete(ctx, in.Key, store.IfMatch(in.etag))
		if err == nil || errors.Is(err, store.ErrNotFound) {
			return in, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return in, fmt.Errorf("lease break %s: delete %s: %w", name, in.Key, err)
		}
		// Renewed, taken over or released meanwhile: judge it again.
	}
	return nil, fmt.Errorf("lease break %s: it kept changing: %w", name, store.ErrConflict)
}
