package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nereusctl/nereusctl/internal/testutil/latencyproxy"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// restartDelay is what the proxy adds to every request in the restart
// economy test: long against the scheduling jitter of a busy machine, so
// that requests sent together arrive within half of it.
const restartDelay = 60 * time.Millisecond

// restartCost is what one `replay` from the newest checkpoint sent,
// through the latency proxy.
type restartCost struct {
	tail      int   // the partition's tail objects (status)
	objects   int64 // GETs of objects/ keys (the tail and the anchor object)
	manifests int64 // GETs of generation manifests
	other     int64 // every other GET that is no LIST (binding, head, checkpoint, probe result)
	lists     int64
	waves     int // rounds of requests that depend on the one before
	retained  int // the objects of [trim, head): what the data-loss check lists
}

// TestRestartEconomyTwoLengthsS3: a restart (replay from the newest
// checkpoint, a 1% tail) of a partition ten times as long sends the same
// requests beyond its tail and its object listing, in the same number of
// dependent rounds, on versitygw behind a proxy that delays every request
// as remote S3 does. What may grow with the length is only the listing of
// [trim, head) that proves no object is missing there (one LIST page per
// rangeKeys objects the checkpoint knows, all sent in one round): S3 has
// no other request that shows a set of keys complete, and a missing one
// below the anchor is data loss (dataloss_missing_object.txtar).
func TestRestartEconomyTwoLengthsS3(t *testing.T) {
	srv := s3server.Start(t)
	p, err := latencyproxy.Start(srv.Endpoint, restartDelay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	at := func(records int) [2]restartCost {
		t.Helper()
		env := map[string]string{"NEREUSCTL_STORE": srv.URL("restart" + strconv.Itoa(records)), "NEREUSCTL_S3_ENDPOINT": srv.Endpoint, "NEREUSCTL_S3_PATH_STYLE": "true",
			"XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}
		runEnv(t, env, 0, "demo", "--topics", "orders", "--partitions", "1", "--records", strconv.Itoa(records), "--checkpoints", "99", "--no-tour", "-q")
		out, _ := runEnv(t, env, 0, "status", "orders-0", "-o", "json")
		var doc struct {
			Partitions []struct {
				StreamID    string `json:"stream_id"`
				TailObjects int    `json:"tail_objects"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Partitions) != 1 {
			t.Fatalf("status -o json: %v\n%s", err, out)
		}
		keys, _ := runEnv(t, env, 0, "store", "ls", "streams/"+doc.Partitions[0].StreamID+"/objects/")
		c := restartCost{tail: doc.Partitions[0].TailObjects, retained: strings.Count(keys, ".kb")}
		direct := env["NEREUSCTL_S3_ENDPOINT"]
		measure := func(c restartCost) restartCost {
			env["NEREUSCTL_S3_ENDPOINT"] = p.URL
			defer func() { env["NEREUSCTL_S3_ENDPOINT"] = direct }()
			p.ResetCounts()
			runEnv(t, env, 0, "replay", "orders-0")
			s := p.Stats()
			for _, tg := range s.Targets {
				switch {
				case latencyproxy.IsList(tg):
					c.lists++
				case strings.Contains(tg, "/objects/"):
					c.objects++
				case strings.Contains(tg, "/generations/"):
					c.manifests++
				default:
					c.other++
				}
			}
			c.waves = s.Waves(restartDelay)
			if testing.Verbose() {
				for i, a := range s.Arrivals {
					t.Logf("  %6.1f ms +%6.1f ms %s", float64(a.Sub(s.Arrivals[0]).Microseconds())/1000, float64(s.Served[i].Microseconds())/1000, s.Targets[i])
				}
			}
			t.Logf("%d records: %d retained objects, tail of %d: %d object GETs, %d manifest GETs, %d other GETs, %d LISTs, %d waves; %d requests in %v",
				records, c.retained, c.tail, c.objects, c.manifests, c.other, c.lists, c.waves, s.Requests, s.Arrivals[len(s.Arrivals)-1].Sub(s.Arrivals[0]).Round(time.Millisecond))
			return c
		}
		tail := measure(c)
		// A fresh checkpoint (at the head): no tail at either length.
		runEnv(t, env, 0, "checkpoint", "create", "orders-0", "-q")
		fresh := measure(restartCost{retained: c.retained})
		return [2]restartCost{tail, fresh}
	}
	s2, l2 := at(10_000), at(100_000)
	short, long := s2[0], l2[0]
	if long.retained < 8*short.retained || long.retained < 1500 {
		t.Fatalf("%d and %d retained objects: the lengths do not differ enough to show anything", short.retained, long.retained)
	}
	for _, c := range []restartCost{short, long} {
		// The tail is read, and the anchor object's digest checked:
		// nothing else under objects/ is read.
		if c.objects != int64(c.tail)+1 {
			t.Errorf("%d object GETs for a tail of %d objects (want the tail and the anchor object)", c.objects, c.tail)
		}
		// The binding and the stored probe result together; the head and
		// the binding's checkpoint together; the stream's listing and the
		// anchor object together; the tail and the manifests after the
		// checkpoint together.
		if c.waves > 4 {
			t.Errorf("%d rounds of requests for a restart (want 4: binding; head and checkpoint; listing and anchor object; tail and manifests)", c.waves)
		}
	}
	// Beyond the tail (the objects after the anchor and the manifests
	// sealed since the checkpoint, which a 1% tail makes ten times as
	// many), the same requests: and with a fresh checkpoint, no tail at
	// either length, the same GETs exactly.
	if short.other != long.other || short.waves != long.waves {
		t.Errorf("a restart ten times as long sent other requests beyond its tail: %+v against %+v", long, short)
	}
	fs, fl := s2[1], l2[1]
	if fs.objects != 1 || fl.objects != 1 || fs.other != fl.other || fs.manifests != fl.manifests || fs.waves != fl.waves || fl.waves > 4 {
		t.Errorf("restarts from a fresh checkpoint: %+v at ten times the length, %+v (want the same GETs, the anchor object alone under objects/, the same rounds, at most 4)", fl, fs)
	}
	// The listing of [trim, head): a first page and object ranges of about
	// rangeKeys (600) known objects each.
	if long.lists > 2+int64(long.retained)/400 {
		t.Errorf("%d LISTs for %d retained objects", long.lists, long.retained)
	}
}
