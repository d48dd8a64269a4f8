package layout_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/nereusctl/nereusctl/internal/demo"
	"github.com/nereusctl/nereusctl/internal/layout"
	"github.com/nereusctl/nereusctl/internal/store"
)

// TestFastGenerationTakesEveryDemoManifest: every generation manifest a
// demo store holds (every topic: COMMITTED and TOPIC_COMPACTED, sealed by
// the appender and by compaction) is taken by the one-pass decoder, to the
// value Decode returns.
func TestFastGenerationTakesEveryDemoManifest(t *testing.T) {
	ctx := context.Background()
	st := store.NewMem("fastgen")
	o := demo.DefaultOptions()
	o.Records = 3000
	if _, err := demo.Run(ctx, st, o); err != nil {
		t.Fatal(err)
	}
	infos, err := st.List(ctx, layout.StreamsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, in := range infos {
		sid, n, ok := generationOf(in.Key)
		if !ok {
			continue
		}
		data, err := st.Get(ctx, in.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		var fast layout.Generation
		if _, _, ok := layout.DecodeGenerationFast(data, &fast); !ok {
			t.Fatalf("%s: the one-pass decoder declined a manifest the demo wrote:\n%s", in.Key, data)
		}
		g, _, err := layout.LoadGeneration(ctx, st, sid, n)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&fast, g) {
			t.Fatalf("%s: one pass %#v, Decode %#v", in.Key, fast, g)
		}
		kinds[g.Kind]++
	}
	if kinds[layout.KindCommitted] == 0 || kinds[layout.KindTopicCompacted] == 0 {
		t.Fatalf("manifests checked by kind: %v; want both kinds", kinds)
	}
}

// generationOf is the stream and number of a generation manifest key
// (streams/<sid>/generations/<n>.json).
func generationOf(key string) (string, int64, bool) {
	sid, rest, ok := strings.Cut(strings.TrimPrefix(key, layout.StreamsPrefix), "/")
	if !ok || !strings.HasPrefix(rest, "generations/") {
		return "", 0, false
	}
	n, err := layout.ParseGenerationKey(key)
	return sid, n, err == nil
}
