package layout

import (
	"context"
	"sort"
	"strings"

	"github.com/nereusctl/nereusctl/internal/store"
)

// StreamListing is every key of one stream (its checkpoints, generations,
// compacted views, head and objects) from a single LIST: on a store that
// lists in pages (S3) a stream of at most store.PageKeys keys is listed in
// one request, and the listings of its parts are taken from it instead of
// one request each. A command reads the head first and lists after it, as
// the listings it replaces would be: an object below the head is written
// before the head moves past it.
type StreamListing struct {
	sid   string
	infos []store.ObjectInfo // sorted by key
}

// ListStream lists the stream in one page when the store pages and the
// stream fits; it returns nil (and sends nothing on a store that does not
// page, such as file://) otherwise, and the caller lists each part.
func ListStream(ctx context.Context, st store.Store, sid string) (*StreamListing, error) {
	infos, complete, paged, err := store.ListFirstPage(ctx, st, StreamPrefix(sid), store.PageKeys)
	if err != nil {
		return nil, err
	}
	if !paged || !complete {
		return nil, nil
	}
	return &StreamListing{sid: sid, infos: infos}, nil
}

// Under returns the listed keys with prefix (a part of the stream), in
// key order.
func (l *StreamListing) Under(prefix string) []store.ObjectInfo {
	i := sort.Search(len(l.infos), func(i int) bool { return l.infos[i].Key >= prefix })
	j := i
	for j < len(l.infos) && strings.HasPrefix(l.infos[j].Key, prefix) {
		j++
	}
	return l.infos[i:j:j]
}

// Objects is ListObjects from the listing.
func (l *StreamListing) Objects() ([]StreamObject, error) {
	infos := l.Under(ObjectsPrefix(l.sid))
	return AppendStreamObjects(make([]StreamObject, 0, len(infos)), infos)
}
