package cmd

import (
	"context"
	"errors"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/nereusctl/nereusctl/internal/kafka"
	"github.com/nereusctl/nereusctl/internal/nkc1"
	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/stream"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openStore opens the configured store with retry and rate limiting.
func openStore(ctx context.Context, cfg Config) (store.Store, error) {
	st, err := store.Open(ctx, cfg.Store, store.OpenOptions{
		Endpoint:  cfg.S3Endpoint,
		Region:    cfg.S3Region,
		PathStyle: cfg.S3PathStyle,
		AllowHTTP: cfg.S3AllowHTTP,
	})
	if err != nil {
		return nil, err
	}
	if cfg.MaxRequestsPerSecond > 0 {
		st = store.WithRateLimit(st, cfg.MaxRequestsPerSecond)
	}
	return store.WithRetry(st, store.DefaultRetryPolicy()), nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// isCorruption reports errors that mean the stored bytes are wrong.
func isCorruption(err error) bool {
	return errors.Is(err, kafka.ErrCorrupt) || errors.Is(err, stream.ErrMissing) || errors.Is(err, stream.ErrAmbiguous) || errors.Is(err, nkc1.ErrCorrupt)
}
