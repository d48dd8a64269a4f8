package recovery

import (
	"context"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Objects is a stream's object listing, fetched lazily: a restart replay
// only lists the objects from its checkpoint's anchor object on (S3's
// StartAfter), so its cost follows the tail, not the log.
type Objects struct {
	ctx   context.Context
	st    store.Store
	sid   string
	start int64 // the listing covers bases >= start; -1: everything
	objs  []layout.StreamObject
	ok    bool
}

// NewObjects lists lazily from st.
func NewObjects(ctx context.Context, st store.Store, sid string) *Objects {
	return &Objects{ctx: ctx, st: st, sid: sid}
}

// AllObjects wraps a complete listing.
func AllObjects(objs []layout.StreamObject) *Objects {
	return &Objects{start: -1, objs: objs, ok: true}
}

// All returns every object of the stream.
func (o *Objects) All() ([]layout.StreamObject, error) {
	if o.ok && o.start < 0 {
		return o.objs, nil
	}
	objs, err := layout.ListObjects(o.ctx, o.st, o.sid)
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	o.objs, o.start, o.ok = objs, -1, true
	return objs, nil
}

// From returns (at least) every object whose base is >= base.
func (o *Objects) From(base int64) ([]layout.StreamObject, error) {
	if o.ok && (o.start < 0 || o.start <= base) {
		return o.objs, nil
	}
	// Keys are <base 20 digits>-<end>.kb: everything after "<base>"
	// has a base >= base.
	infos, err := o.st.ListAfter(o.ctx, layout.ObjectsPrefix(o.sid), layout.ObjectsPrefix(o.sid)+fmt.Sprintf("%020d", base))
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	objs := make([]layout.StreamObject, 0, len(infos))
	for _, in := range infos {
		b, e, err := layout.ParseObjectKey(in.Key)
		if err != nil {
			return nil, err
		}
		objs = append(objs, layout.StreamObject{Key: in.Key, Base: b, End: e, Size: in.Size, ETag: in.ETag})
	}
	o.objs, o.start, o.ok = objs, base, true
	return objs, nil
}
