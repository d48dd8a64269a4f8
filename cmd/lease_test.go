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
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestLeaseTTLBounds: --lease-ttl takes 1s to 1h (exit 2 outside, with
// nothing done), on every command, from the flag and from the
// environment.
func TestLeaseTTLBounds(t *testing.T) {
	ctx := context.Background()
	st := demoMem(t)
	for _, ttl := range []string{"2h", "61m", "999ms", "0s"} {
		_, _, err := runWithStore(ctx, t, st, "trim", "orders-0", "--to", "10", "--lease-ttl", ttl)
		if code := exitcode.Of(err); code != exitcode.Usage || !strings.Contains(err.Error(), "--lease-ttl") {
			t.Fatalf("--lease-ttl %s: exit %d (%v), want 2", ttl, code, err)
		}
	}
	b, _, err := layout.LoadBinding(ctx, st, "orders", 0)
	if err != nil || b.ObservedLogStart != 0 {
		t.Fatalf("a refused --lease-ttl trimmed: %+v %v", b, err)
	}
	t.Setenv("NEREUSCTL_LEASE_TTL", "3h")
	if _, _, err := runWithStore(ctx, t, st, "gc", "--dry-run"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("NEREUSCTL_LEASE_TTL=3h: %v, want exit 2", err)
	}
	t.Setenv("NEREUSCTL_LEASE_TTL", "1h")
	if _, _, err := runWithStore(ctx, t, st, "trim", "orders-0", "--to", "10"); err != nil {
		t.Fatalf("--lease-ttl 1h: %v", err)
	}
}

// TestLeaseBreakCommand: lease break refuses a live lease (exit 4, naming
// the holder, nothing removed), breaks a corrupt one with an audit line on
// stderr and in the JSON document, and lease list shows the states.
func TestLeaseBreakCommand(t *testing.T) {
	ctx := context.Background()
	st := demoMem(t)
	live, err := lease.Acquire(ctx, st, lease.PartitionName(layout.TopicPartition{Topic: "orders", Partition: 0}), "other-host/pid-1/unknown/x", time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := layout.LeaseKey(lease.PartitionName(layout.TopicPartition{Topic: "orders", Partition: 1}))
	if _, err := st.Put(ctx, bad, []byte("{}"), store.IfAbsent()); err != nil {
		t.Fatal(err)
	}

	out, _, err := runWithStore(ctx, t, st, "lease", "list", "-o", "json")
	if exitcode.Of(err) != exitcode.Verify {
		t.Fatalf("lease list with a corrupt lease: %v, want exit 3", err)
	}
	var doc leaseListJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Leases) != 2 || doc.Leases[0].State != lease.StateLive || doc.Leases[1].State != lease.StateCorrupt {
		t.Fatalf("lease list: %v\n%s", err, out)
	}

	_, _, err = runWithStore(ctx, t, st, "lease", "break", "orders-0")
	if exitcode.Of(err) != exitcode.Blocked || !strings.Contains(err.Error(), "other-host/pid-1/unknown/x") {
		t.Fatalf("break of a live lease: %v, want exit 4 naming the holder", err)
	}
	if err := live.Renew(ctx); err != nil {
		t.Fatalf("the refused break removed the live lease: %v", err)
	}

	out, errb, err := runWithStore(ctx, t, st, "lease", "break", "orders-1", "-o", "json")
	if err != nil {
		t.Fatalf("break of a corrupt lease: %v\n%s", err, errb)
	}
	var bd leaseBreakJSON
	if err := json.Unmarshal([]byte(out), &bd); err != nil || !bd.Broken || bd.Lease.State != lease.StateCorrupt || bd.BrokenBy == "" || bd.BrokenAtMs == 0 {
		t.Fatalf("lease break -o json: %v\n%s", err, out)
	}
	if !strings.Contains(errb, "audit: lease "+bad+" (corrupt") {
		t.Fatalf("no audit line on stderr:\n%s", errb)
	}
	if _, err := st.Head(ctx, bad); err == nil {
		t.Fatal("the corrupt lease is still there")
	}
	// Again: nothing to break, exit 0.
	if out, _, err := runWithStore(ctx, t, st, "lease", "break", "orders-1"); err != nil || !strings.Contains(out, "no lease") {
		t.Fatalf("second break: %v\n%s", err, out)
	}
	if _, _, err := runWithStore(ctx, t, st, "lease", "break", "orders-1", "--name", "x"); exitcode.Of(err) != exitcode.Usage {
		t.Fatalf("TOPIC-PARTITION and --name: %v, want exit 2", err)
	}
}
