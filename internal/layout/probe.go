package layout

import (
	"context"
	"errors"
	"fmt"

	"github.com/nereusctl/nereusctl/internal/store"
)

// StoreProbeKey is where the result of the last store probe is kept
// (docs/layout.md, "Store probe"): at the root, outside tasks/, so that gc
// never collects it.
const StoreProbeKey = "store-probe.json"

// MaxStoreProbeBytes caps the store probe document.
const MaxStoreProbeBytes = 64 << 10

// StoreProbe is the result of a store probe (package storeprobe): whether
// the store honoured each conditional request nereusctl's guarantees rest
// on, for one store reached through one endpoint, at a time, by a build.
// Mutating commands read it before they write (docs/s3.md, "Conditional
// writes"). It is never authority over data: a missing, stale or
// unreadable one is probed again.
type StoreProbe struct {
	// Store is the store's canonical identity: s3://BUCKET/PREFIX.
	Store string `json:"store"`
	// Endpoint is the endpoint the requests went to ("aws" for AWS's own).
	Endpoint string `json:"endpoint"`
	// ProbedMs is when the probe ran (ms since the epoch).
	ProbedMs int64 `json:"probed_ms"`
	// Build names the nereusctl that ran it ("nereusctl v1.2.0 (abc1234)").
	Build string `json:"build"`
	// OK is true exactly when every check held.
	OK     bool         `json:"ok"`
	Checks []ProbeCheck `json:"checks"`
}

// ProbeCheck is one check of a store probe.
type ProbeCheck struct {
	// Name is the check ("if-none-match-refuses").
	Name string `json:"name"`
	// Guarantee is what rests on it, in words.
	Guarantee string `json:"guarantee"`
	OK        bool   `json:"ok"`
	// Detail is what the store did.
	Detail string `json:"detail"`
}

func (StoreProbe) carriesDigest() {}

// maxProbeChecks bounds the checks of one probe document.
const maxProbeChecks = 64

// Validate lets StoreProbe be decoded with Decode.
func (p *StoreProbe) Validate() error {
	if err := probeText("store", p.Store, 1024); err != nil {
		return err
	}
	if err := probeText("endpoint", p.Endpoint, 1024); err != nil {
		return err
	}
	if err := probeText("build", p.Build, 256); err != nil {
		return err
	}
	if p.ProbedMs <= 0 {
		return fmt.Errorf("probed_ms %d: want a time after the epoch", p.ProbedMs)
	}
	if len(p.Checks) == 0 || len(p.Checks) > maxProbeChecks {
		return fmt.Errorf("%d checks: want 1 to %d", len(p.Checks), maxProbeChecks)
	}
	all := true
	seen := make(map[string]bool, len(p.Checks))
	for _, c := range p.Checks {
		if !probeName(c.Name) {
			return fmt.Errorf("check name %q: want 1 to 64 of [a-z0-9-]", c.Name)
		}
		if seen[c.Name] {
			return fmt.Errorf("check %q twice", c.Name)
		}
		seen[c.Name] = true
		if err := probeText("check "+c.Name+": guarantee", c.Guarantee, 1024); err != nil {
			return err
		}
		if len(c.Detail) > 4096 {
			return fmt.Errorf("check %s: detail longer than 4096 bytes", c.Name)
		}
		all = all && c.OK
	}
	if p.OK != all {
		return fmt.Errorf("ok is %v but the checks say %v", p.OK, all)
	}
	return nil
}

// Broken returns the checks that failed, in order.
func (p *StoreProbe) Broken() []ProbeCheck {
	var out []ProbeCheck
	for _, c := range p.Checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

func probeText(field, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", field)
	case len(s) > max:
		return fmt.Errorf("%s is longer than %d bytes", field, max)
	}
	return nil
}

func probeName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// LoadStoreProbe reads the stored probe result (capped at
// MaxStoreProbeBytes), returning its ETag for the next If-Match. A missing
// one is store.ErrNotFound; one that does not decode wraps
// ErrCorruptDocument (or ErrLegacyDocument without a digest).
func LoadStoreProbe(ctx context.Context, st store.Store) (*StoreProbe, string, error) {
	data, err := store.GetCapped(ctx, st, StoreProbeKey, MaxStoreProbeBytes)
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return nil, "", corrupt(StoreProbeKey, "%v", err)
		}
		return nil, "", err
	}
	var p StoreProbe
	if err := Decode(StoreProbeKey, data, &p); err != nil {
		return nil, store.ETagOf(data), err
	}
	return &p, store.ETagOf(data), nil
}
