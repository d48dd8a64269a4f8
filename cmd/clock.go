package cmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/state"
)

// parseNow is the one parser of every --now flag: an RFC3339 time, strict
// (no surrounding blanks, a time zone required); "" is the wall clock. A
// bad value is a usage error (exit 2). explicit reports whether a value
// was given.
func parseNow(v string) (now time.Time, explicit bool, err error) {
	if v == "" {
		return time.Now(), false, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil || strings.TrimSpace(v) != v {
		return time.Time{}, false, exitcode.UsageErr(fmt.Errorf("--now %q: want RFC3339, e.g. 2026-11-29T03:00:00Z", v))
	}
	return t, true, nil
}

// clockFlags are --now and --producer-id-expiration-ms of a command that
// derives producer state (docs/kafka-retention-rules.md, "Producer
// expiration").
type clockFlags struct {
	now          string
	expirationMs int64
}

// addClockFlags registers --now and --producer-id-expiration-ms on c.
// withNow false registers only the latter (a command with a --now of its
// own, parsed with parseNow too).
func (f *clockFlags) add(c *cobra.Command, withNow bool) {
	if withNow {
		c.Flags().StringVar(&f.now, "now", "", "the clock producer expiration is decided at (RFC3339; default: now)")
	}
	c.Flags().Int64Var(&f.expirationMs, "producer-id-expiration-ms", state.DefaultProducerIDExpirationMs,
		"Kafka's producer.id.expiration.ms: a producer idle this long with no open transaction is dropped")
}

// clock returns the producer-expiration clock of the flags.
func (f *clockFlags) clock() (state.Clock, error) {
	_, c, err := f.nowAndClock()
	return c, err
}

// nowAndClock returns --now (default: the wall clock) and the
// producer-expiration clock at it.
func (f *clockFlags) nowAndClock() (time.Time, state.Clock, error) {
	now, _, err := parseNow(f.now)
	if err != nil {
		return time.Time{}, state.Clock{}, err
	}
	c, err := f.clockAt(now)
	return now, c, err
}

// clockAt is clock with the time already parsed.
func (f *clockFlags) clockAt(now time.Time) (state.Clock, error) {
	if f.expirationMs <= 0 {
		return state.Clock{}, exitcode.UsageErr(fmt.Errorf("--producer-id-expiration-ms %d: want a positive number of milliseconds", f.expirationMs))
	}
	if now.UnixMilli() <= 0 {
		return state.Clock{}, exitcode.UsageErr(fmt.Errorf("--now %s: want a time after 1970-01-01T00:00:00Z", now.Format(time.RFC3339)))
	}
	return state.Clock{NowMs: now.UnixMilli(), ExpirationMs: f.expirationMs}, nil
}
