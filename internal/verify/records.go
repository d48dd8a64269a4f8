package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/nereusctl/nereusctl/internal/fleet"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// RecordsParallel is RecordsAll reading up to n records at once
// (--parallel): the records and the failures come in key order whatever
// finishes first, and a record that cannot be read is a failure of its own
// that never stops the others. The error is the listing's own, or the
// context's end.
func RecordsParallel(ctx context.Context, st store.Store, n int) ([]layout.Quarantine, []RecordFailure, error) {
	infos, err := st.List(ctx, layout.QuarantinePrefix)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, len(infos))
	for _, in := range infos {
		if !strings.HasPrefix(in.Key, layout.QuarantinePrefix+"archive/") {
			keys = append(keys, in.Key)
		}
	}
	type loaded struct {
		q   layout.Quarantine
		bad *RecordFailure
	}
	res, err := fleet.Map(ctx, n, keys, func(ctx context.Context, _ int, key string) (loaded, error) {
		var q layout.Quarantine
		if _, err := layout.Load(ctx, st, key, &q); err != nil {
			if ctx.Err() != nil {
				return loaded{}, ctx.Err()
			}
			err = fmt.Errorf("quarantine record %s: %w", key, err)
			return loaded{bad: &RecordFailure{Key: key, Error: err.Error(), err: err}}, nil
		}
		return loaded{q: q}, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read quarantine records: %w", err)
	}
	out := []layout.Quarantine{}
	bad := []RecordFailure{}
	for _, r := range res {
		if r.bad != nil {
			bad = append(bad, *r.bad)
			continue
		}
		out = append(out, r.q)
	}
	return out, bad, nil
}
