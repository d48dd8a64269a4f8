// Package importrun imports a Kafka partition directory into a store in one
// call, for tests of the packages that read imported streams (the command
// prepares the import, checks its flags, then runs it).
package importrun

import (
	"context"

	"github.com/nereusctl/nereusctl/internal/importer"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Run imports opt.Dir into st: importer.Prepare, then (*Import).Run.
func Run(ctx context.Context, st store.Store, opt importer.Options) (*importer.Result, error) {
	im, err := importer.Prepare(opt)
	if err != nil {
		return nil, err
	}
	return im.Run(ctx, st)
}
