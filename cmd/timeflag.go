package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nereusctl/nereusctl/internal/exitcode"
)

// parseTimeFlag parses a TIME flag value (--since, --until, --before): an
// RFC3339 time with its zone (2026-11-08T00:00:00Z) or a decimal count of
// milliseconds since the epoch, as Kafka's record timestamps are. Strict:
// no blanks, base 10 only; a bad value is a usage error naming the flag.
func parseTimeFlag(flag, v string) (int64, error) {
	if strings.TrimSpace(v) != v || v == "" {
		return 0, exitcode.UsageErr(fmt.Errorf("--%s %q: want an RFC3339 time (e.g. 2026-11-08T00:00:00Z) or milliseconds since the epoch", flag, v))
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms < 0 {
			return 0, exitcode.UsageErr(fmt.Errorf("--%s %d: want milliseconds since the epoch, >= 0", flag, ms))
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, exitcode.UsageErr(fmt.Errorf("--%s %q: want an RFC3339 time (e.g. 2026-11-08T00:00:00Z) or milliseconds since the epoch", flag, v))
	}
	return t.UnixMilli(), nil
}

// msTime formats a timestamp in ms for people: RFC3339 in UTC with
// milliseconds.
func msTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
