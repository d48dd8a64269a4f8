package cmd

import (
	"strings"
	"testing"
	"time"
)

// complete runs the hidden __complete command as the shell scripts do and
// returns the candidates and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	out, errOut, code := runTTY(t, false, nil, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d\n%s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func demoStore(t *testing.T) string {
	t.Helper()
	url := "mem://" + strings.ReplaceAll(t.Name(), "/", "_")
	if _, errOut, code := runTTY(t, false, nil, "--store", url, "demo", "--records", "600", "--no-tour"); code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, errOut)
	}
	return url
}

func TestCompletePartitionsFromTheStore(t *testing.T) {
	url := demoStore(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"dump", "ord"}, "orders-0 orders-1"},
		{[]string{"dump", "orders-1"}, "orders-1"},
		{[]string{"replay", "pay"}, "payments-0 payments-1"},
		{[]string{"trim", "cust"}, "customers-0 customers-1"},
		{[]string{"checkpoint", "list", "__tr"}, "__transaction_state-0"},
		{[]string{"dump", "orders-0", ""}, ""},                  // one partition only
		{[]string{"verify", "orders-0", "ord"}, "orders-1"},     // not those given
		{[]string{"status", "orders-1", "orders-0", "ord"}, ""}, // all given
		{[]string{"compact", "__c"}, "__consumer_offsets-0 __consumer_offsets-1"},
		{[]string{"config", "get", "orde"}, "orders orders-0 orders-1"},
		{[]string{"config", "set", "orders", "retention.b"}, "retention.bytes="},
		{[]string{"dump", "nosuch"}, ""},
	}
	for _, c := range cases {
		got, dir := complete(t, append([]string{"--store", url}, c.args...)...)
		if strings.Join(got, " ") != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
		if !strings.HasPrefix(dir, ":") || dir == ":1" {
			t.Errorf("%v: directive %s", c.args, dir)
		}
	}
}

func TestCompleteFlagValues(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"status", "-o", ""}, "table wide json yaml"},
		{[]string{"--output", "y"}, "yaml"},
		{[]string{"verify", "--log-level", "w"}, "warn"},
		{[]string{"dump", "x-0", "--decoder", ""}, "offsets txn"},
		{[]string{"checkpoint", "inspect", "--section", "a"}, "anchor aborted"},
		{[]string{"import", "kafka-log", "--cleanup-policy", "comp"}, "compact compact,delete"},
		{[]string{"import", "kafka-log", "--topic-config", "retention.m"}, "retention.ms="},
		{[]string{"--store", "s"}, "s3://"},
		{[]string{"completion", ""}, "bash zsh fish"},
	}
	for _, c := range cases {
		got, _ := complete(t, c.args...)
		if strings.Join(got, " ") != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
}

// A store that does not answer, or holds many partitions, never makes the
// shell wait past the budget nor floods it.
func TestCompletePartitionsIsBounded(t *testing.T) {
	url := demoStore(t)
	oldMax, oldBudget := completionMax, completionBudget
	t.Cleanup(func() { completionMax, completionBudget = oldMax, oldBudget })
	completionMax = 3
	got, _ := complete(t, "--store", url, "status", "")
	if len(got) != 3 {
		t.Errorf("%d names, want at most 3: %q", len(got), got)
	}

	completionBudget = 300 * time.Millisecond
	endpoint, _ := hungS3(t)
	start := time.Now()
	got, dir := complete(t, "--store", "s3://bucket/p", "--s3-endpoint", endpoint, "--s3-path-style", "--request-timeout", "0s", "dump", "ord")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("completion against a hung store took %s", took)
	}
	if len(got) != 0 || dir != ":1" {
		t.Errorf("hung store: %q %s, want nothing and the error directive", got, dir)
	}
}
