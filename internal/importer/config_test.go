package importer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/retention"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestImportNeverInventsRetention: without a topic config the binding has
// retention off, says where that came from, and a retention run over the
// imported real partitions trims nothing.
func TestImportNeverInventsRetention(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem(t.Name())
	var tps []layout.TopicPartition
	for _, name := range []string{"first_topic-0", "first_topic-1", "first_topic-2", "new_topic-0", "__consumer_offsets-18"} {
		res, err := Run(ctx, st, Options{Dir: filepath.Join(fixtureRoot, "kafka-uncompacted", name)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.RetentionOff || res.ConfigSource != retention.SourceImportDefault || strings.Join(res.ConfigDefaulted, ",") != "retention.ms=-1,retention.bytes=-1" {
			t.Fatalf("%s: retention off %v, source %q, defaulted %v", name, res.RetentionOff, res.ConfigSource, res.ConfigDefaulted)
		}
		b, _, err := layout.LoadBinding(ctx, st, res.Topic, res.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if b.Config.RetentionMs != -1 || b.Config.RetentionBytes != -1 || b.ConfigSource != retention.SourceImportDefault {
			t.Fatalf("%s: binding retention.ms %d, retention.bytes %d, source %q", name, b.Config.RetentionMs, b.Config.RetentionBytes, b.ConfigSource)
		}
		if want := map[bool]string{true: "compact", false: "delete"}[strings.HasPrefix(name, "__")]; b.Config.CleanupPolicy != want {
			t.Fatalf("%s: cleanup.policy %q, want %q", name, b.Config.CleanupPolicy, want)
		}
		tps = append(tps, layout.TopicPartition{Topic: res.Topic, Partition: res.Partition})
	}
	rep, err := retention.RunJob(ctx, st, retention.JobOptions{Partitions: tps, DryRun: true, Now: farFuture})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trimmed != 0 || rep.Errors != 0 {
		t.Fatalf("retention dry run after import: %d would trim, %d errors", rep.Trimmed, rep.Errors)
	}
}

func TestImportTopicConfigSources(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(fixtureRoot, "kafka-uncompacted", "first_topic-0")
	file := []byte("Dynamic configs for topic first_topic are:\n  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}\n  unclean.leader.election.enable=false sensitive=false synonyms={}\n")
	cases := []struct {
		name   string
		opt    Options
		source string
		ms     int64
		bytes  int64
	}{
		{"flags", Options{TopicConfig: []retention.KV{{Key: "retention.ms", Value: "5000"}, {Key: "retention.bytes", Value: "100"}}}, retention.SourceFlags, 5000, 100},
		{"legacy flag", Options{CleanupPolicy: "compact,delete"}, retention.SourceFlags, -1, -1},
		{"file", Options{ConfigFileData: file, ConfigFileName: "/tmp/cfg/first.cfg"}, "kafka-configs-file:first.cfg", 1000, -1},
		{"file then flags", Options{ConfigFileData: file, ConfigFileName: "first.cfg", TopicConfig: []retention.KV{{Key: "retention.ms", Value: "7"}}}, "kafka-configs-file:first.cfg+topic-config-flags", 7, -1},
	}
	for _, c := range cases {
		st := store.NewMem(t.Name() + c.name)
		c.opt.Dir = dir
		res, err := Run(ctx, st, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _, err := layout.LoadBinding(ctx, st, "first_topic", 0)
		if err != nil {
			t.Fatal(err)
		}
		if b.ConfigSource != c.source || b.Config.RetentionMs != c.ms || b.Config.RetentionBytes != c.bytes || res.ConfigSource != c.source {
			t.Errorf("%s: source %q, retention.ms %d, retention.bytes %d; want %q %d %d", c.name, b.ConfigSource, b.Config.RetentionMs, b.Config.RetentionBytes, c.source, c.ms, c.bytes)
		}
		if c.name == "file" && !strings.Contains(strings.Join(res.Notes, "\n"), "ignored 1 configs nereusctl does not use: unclean.leader.election.enable") {
			t.Errorf("file: notes %v", res.Notes)
		}
	}
	for _, bad := range []Options{
		{TopicConfig: []retention.KV{{Key: "retention.ms", Value: "-9"}}},
		{ConfigFileData: []byte("Dynamic configs for topic other are:\n  retention.ms=1\n"), ConfigFileName: "x"},
		{ConfigFileData: []byte("retention.ms=abc\n"), ConfigFileName: "x"},
	} {
		st := store.NewMem(t.Name() + "bad")
		bad.Dir = dir
		if _, err := Run(ctx, st, bad); !errors.Is(err, retention.ErrBadTopicConfig) || !errors.Is(err, ErrRefused) {
			t.Errorf("%+v: err %v, want a refused topic config", bad.TopicConfig, err)
		}
		assertEmpty(t, st)
	}
}

// farFuture is a clock at which Kafka's 7-day default would have expired
// every fixture segment.
var farFuture = time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
