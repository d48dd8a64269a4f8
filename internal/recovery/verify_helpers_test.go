package recovery

import (
	"context"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Verify checks every checkpoint of a binding: the object (HEAD size and
// ETag against the bytes), every section CRC and digest, the root, the anchor
// object digest against the stream, the binding reference, and that the
// binding's checkpoint_ref names an existing checkpoint with its digest.
func Verify(ctx context.Context, st store.Store, b *layout.Binding) (*VerifyReport, error) {
	h, _, err := layout.LoadHead(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	return VerifyAt(ctx, st, b, h)
}

// VerifyAt is Verify against the head the caller read. The objects and
// the checkpoints are listed together (one LIST on S3 for a stream of at
// most a page of keys: Objects.Prefetch).
func VerifyAt(ctx context.Context, st store.Store, b *layout.Binding, h *layout.Head) (*VerifyReport, error) {
	_, objs, infos, err := listObjectsAndCheckpoints(ctx, st, b.StreamID)
	if err != nil {
		return nil, err
	}
	return VerifyListed(ctx, st, b, h, objs, infos)
}
