package metrics

import (
	"errors"
	"fmt"
	"io"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Previous is what the last output of a group (one command and shard)
// held of the families a run may carry over (carried): the last success
// times, and the per-partition verification times.
type Previous struct {
	lastSuccess map[string]float64
	verified    map[verifiedKey]float64
}

type partKey struct{ topic, partition string }

type verifiedKey struct {
	partKey
	level string
}

// verifiedKeys are the verification series, sorted.
func (p *Previous) verifiedKeys() []verifiedKey {
	out := make([]verifiedKey, 0, len(p.verified))
	for k := range p.verified {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		if a.partition != b.partition {
			return a.partition < b.partition
		}
		return a.level < b.level
	})
	return out
}

// ownLabels are the labels of a carried family's own (the rest of a
// series' labels are its group's).
var ownLabels = map[string][]string{
	LastSuccess:                    nil,
	DeprecatedRetentionLastSuccess: nil,
	PartitionLastVerified:          {TopicLabel, PartitionLabel, LevelLabel},
}

// previousOf picks group's series of the carried families out of fams. A
// series is the group's when its labels, less the family's own and those
// with an empty value (the Pushgateway's instance=""), are exactly group:
// the same command in another shard, or pushed with other labels, is
// another group.
func previousOf(fams []*dto.MetricFamily, group map[string]string) *Previous {
	p := &Previous{lastSuccess: map[string]float64{}, verified: map[verifiedKey]float64{}}
	for _, mf := range fams {
		own, ok := ownLabels[mf.GetName()]
		if !ok || mf.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetGauge().GetValue()
			vals := map[string]string{}
			rest := map[string]string{}
			for _, l := range m.GetLabel() {
				if l.GetValue() == "" {
					continue
				}
				if contains(own, l.GetName()) {
					vals[l.GetName()] = l.GetValue()
				} else {
					rest[l.GetName()] = l.GetValue()
				}
			}
			if !sameLabels(rest, group) || len(vals) != len(own) {
				continue
			}
			if mf.GetName() == PartitionLastVerified {
				p.verified[verifiedKey{partKey{vals[TopicLabel], vals[PartitionLabel]}, vals[LevelLabel]}] = v
			} else {
				p.lastSuccess[mf.GetName()] = v
			}
		}
	}
	return p
}

// ParsePrevious reads an exposition in format (a textfile: the text
// format) and picks group's carried series out of it.
func ParsePrevious(r io.Reader, format expfmt.Format, group map[string]string) (*Previous, error) {
	var fams []*dto.MetricFamily
	if format.FormatType() == expfmt.TypeTextPlain || format.FormatType() == expfmt.TypeUnknown {
		// The text parser: it reports the line of a syntax error.
		p := expfmt.NewTextParser(model.UTF8Validation)
		m, err := p.TextToMetricFamilies(r)
		if err != nil {
			return nil, err
		}
		for _, mf := range m {
			fams = append(fams, mf)
		}
		return previousOf(fams, group), nil
	}
	dec := expfmt.NewDecoder(r, format)
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", format, err)
		}
		fams = append(fams, mf)
	}
	return previousOf(fams, group), nil
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
