package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/exitcode"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/lease"
)

// config set over a topic one of whose partitions another job holds: the
// JSON document lists the partition written and carries the run's error
// (exit 4), as the error document would, rather than leaving it to stderr.
func TestConfigSetJSONCarriesError(t *testing.T) {
	ctx := context.Background()
	st := demoMem(t)
	if _, err := lease.Acquire(ctx, st, lease.PartitionName(layout.TopicPartition{Topic: "orders", Partition: 1}), "other-host/pid-1/unknown/x", time.Hour, nil, nil); err != nil {
		t.Fatal(err)
	}
	out, _, err := runWithStore(ctx, t, st, "--lease-wait", "0s", "config", "set", "orders", "retention.ms=3600000", "-o", "json")
	if exitcode.Of(err) != exitcode.Blocked {
		t.Fatalf("config set with a held lease: %v, want exit 4", err)
	}
	var doc configDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Partitions) != 1 || doc.Partitions[0].Partition != 0 || !doc.Partitions[0].Written {
		t.Fatalf("partitions %+v, want orders-0 written alone", doc.Partitions)
	}
	if doc.Error == nil || doc.Error.Code != int(exitcode.Blocked) || doc.Error.Name != "blocked" || !strings.Contains(doc.Error.Message, "other-host/pid-1/unknown/x") {
		t.Fatalf("error %+v, want the held lease (exit 4, naming the holder)", doc.Error)
	}
}
