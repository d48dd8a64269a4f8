package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/store"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openStore opens the configured store with retry and rate limiting;
// create makes a missing file:// root (demo, import).
// log (nil: none) gets each store request at debug level, retries and lost
// preconditions at info, give-ups at warn.
func openStore(ctx context.Context, cfg Config, create bool, log *slog.Logger) (store.Store, error) {
	return openMeteredStore(ctx, cfg, create, log, store.NewMeter(cfg.MaxRequestsPerSecond))
}

// openMeteredStore is openStore accounting in meter (--stats). The request
// budget (--max-requests-per-second) bounds what the store is sent: on
// s3:// every HTTP attempt (the meter's, at the wire, retries included);
// on file:// and mem:// every store call (WithRateLimit under WithRetry,
// so each retry waits its turn too).
func openMeteredStore(ctx context.Context, cfg Config, create bool, log *slog.Logger, meter *store.Meter) (store.Store, error) {
	st, err := store.Open(ctx, cfg.Store, store.OpenOptions{
		S3Endpoint:  cfg.S3Endpoint,
		S3Region:    cfg.S3Region,
		S3PathStyle: cfg.S3PathStyle,
		S3AllowHTTP: cfg.S3AllowHTTP,
		// The SDK's own GET, for an A/B of the direct one (docs/configuration.md).
		S3SDKReads: os.Getenv("NEREUSCTL_S3_SDK_READS") == "true",
		Create:     create,
		Log:        log,
		Meter:      meter,
	})
	if err != nil {
		return nil, err
	}
	_, http := st.(*store.S3)
	st = store.WithTimeout(st, cfg.RequestTimeout) // each attempt, under the retry
	st = store.WithLog(st, log)
	if cfg.MaxRequestsPerSecond > 0 && !http {
		st = store.WithRateLimit(st, cfg.MaxRequestsPerSecond)
	}
	p := store.DefaultRetryPolicy()
	p.Log = log
	p.Meter = meter
	return store.WithRetry(st, p), nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// terminalWidth is stdout's width on a terminal, else $COLUMNS, else 100.
func terminalWidth(w io.Writer) int {
	if t, ok := w.(*trackedWriter); ok {
		w = t.w
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			return cols
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 20 {
		return c
	}
	return 100
}

// keyHint is the hint of an object key given on the command line that is
// not a valid key.
const keyHint = "object keys are relative, slash-separated paths inside the store, e.g. bindings/orders/0.json; list them with 'nereusctl store ls'"

// keyArg checks an object key (or key prefix) given on the command line:
// an invalid one is a usage error (exit 2), before any store request.
func keyArg(what, key string) error {
	if key == "" {
		return nil
	}
	// a prefix may end in '/'; the key rules apply to what it names
	k := strings.TrimSuffix(key, "/")
	if err := store.ValidateKey(k); err != nil {
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s %s: %w", what, key, err), keyHint)
	}
	return nil
}

// keyErr maps a store's refusal of a key the operator gave (the file://
// rules beyond ValidateKey) to a usage error; other errors pass.
func keyErr(err error) error {
	if errors.Is(err, store.ErrInvalidKey) {
		return exitcode.Wrap(exitcode.Usage, err, keyHint)
	}
	return err
}

// localFileArg checks a local file named by a flag: it must exist and be
// a regular file. A missing or unreadable one is a usage error (exit 2),
// before any store request.
func localFileArg(flag, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s %s: %w", flag, path, err), "check the path: it names a local file")
	}
	if !fi.Mode().IsRegular() {
		return exitcode.Wrap(exitcode.Usage, fmt.Errorf("%s %s: not a regular file", flag, path), "check the path: it names a local file")
	}
	return nil
}
