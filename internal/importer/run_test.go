package importer

import (
	"context"

	"github.com/nereusctl/nereusctl/internal/store"
)

// Run imports opt.Dir into st: Prepare, then (*Import).Run.
func Run(ctx context.Context, st store.Store, opt Options) (*Result, error) {
	im, err := Prepare(opt)
	if err != nil {
		return nil, err
	}
	return im.Run(ctx, st)
}
