package layout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/store"
)

// Upgrade actions, one per document looked at.
const (
	UpgradeCurrent      = "current"       // already carries a valid digest
	UpgradeUpgraded     = "upgraded"      // rewritten with its digest (If-Match)
	UpgradeWould        = "would-upgrade" // --dry-run: would be rewritten
	UpgradeKept         = "kept"          // a legacy generation manifest: immutable, left as is
	UpgradeRefused      = "refused"       // malformed or invalid: reported, never rewritten
	UpgradeChanged      = "changed"       // changed by another writer meanwhile: not rewritten
	UpgradeUnreadable   = "unreadable"    // the store failed to read or write it
	UpgradeBlocked      = "blocked"       // its partition's lease is held by another job: not looked at
	upgradeKindBinding  = "binding"
	upgradeKindHead     = "head"
	upgradeKindManifest = "generation"
	upgradeKindQuarant  = "quarantine"
	upgradeKindLease    = "lease"
)

// UpgradeItem is what Upgrade did with one document.
type UpgradeItem struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// UpgradeReport is the outcome of Upgrade. Items lists every document not
// already current.
type UpgradeReport struct {
	DryRun  bool           `json:"dry_run"`
	Counts  map[string]int `json:"counts"`
	Items   []UpgradeItem  `json:"items"`
	Scanned int            `json:"scanned"`
}

// Err summarises the documents that were refused, changed or unreadable:
// nil when there are none. Refused documents wrap ErrCorruptDocument,
// documents changed meanwhile store.ErrPreconditionFailed.
func (r *UpgradeReport) Err() error {
	var refused, changed, unreadable, blocked []UpgradeItem
	for _, it := range r.Items {
		switch it.Action {
		case UpgradeBlocked:
			blocked = append(blocked, it)
		case UpgradeRefused:
			refused = append(refused, it)
		case UpgradeChanged:
			changed = append(changed, it)
		case UpgradeUnreadable:
			unreadable = append(unreadable, it)
		}
	}
	switch {
	case len(refused) > 0:
		return fmt.Errorf("store upgrade: %w: %d documents refused, not rewritten; first: %s", ErrCorruptDocument, len(refused), refused[0].Detail)
	case len(unreadable) > 0:
		return fmt.Errorf("store upgrade: %d documents could not be read; first: %s", len(unreadable), unreadable[0].Detail)
	case len(changed) > 0:
		return fmt.Errorf("store upgrade: %w: %d documents changed by another writer meanwhile, not rewritten; first: %s (rerun to upgrade them)", store.ErrPreconditionFailed, len(changed), changed[0].Key)
	case len(blocked) > 0:
		return errkind.Markf(errkind.Blocked, "store upgrade: %d partitions held by another job, not upgraded; first: %s (rerun once it is done)", len(blocked), blocked[0].Detail)
	}
	return nil
}

// UpgradeOptions steer UpgradeWith.
type UpgradeOptions struct {
	DryRun bool
	// Partition, when set (and not in a dry run), wraps the upgrade of one
	// binding with its stream's head and manifests: the command holds the
	// partition's lease in it, as every command that writes a partition's
	// documents does. Its error (a lease another job holds) leaves that
	// partition alone, reported blocked; the others go on.
	Partition func(ctx context.Context, tp TopicPartition, fn func(ctx context.Context) error) error
}

// UpgradeWith is Upgrade with options.
func UpgradeWith(ctx context.Context, st store.Store, o UpgradeOptions) (*UpgradeReport, error) {
	dryRun := o.DryRun
	rep := &UpgradeReport{DryRun: dryRun, Counts: map[string]int{}, Items: []UpgradeItem{}}
	bindings, err := st.List(ctx, BindingsPrefix)
	if err != nil {
		return rep, fmt.Errorf("store upgrade: list %s: %w", BindingsPrefix, err)
	}
	seen := map[string]bool{}
	for _, in := range bindings {
		t, p, perr := ParseBindingKey(in.Key)
		if o.Partition == nil || dryRun || perr != nil {
			if err := upgradePartition(ctx, st, rep, in.Key, seen, dryRun); err != nil {
				return rep, err
			}
			continue
		}
		var inner error
		err := o.Partition(ctx, TopicPartition{Topic: t, Partition: p}, func(ctx context.Context) error {
			inner = upgradePartition(ctx, st, rep, in.Key, seen, dryRun)
			return inner
		})
		if inner != nil {
			return rep, inner
		}
		if err != nil {
			rep.Scanned++
			rep.Counts[UpgradeBlocked]++
			rep.Items = append(rep.Items, UpgradeItem{Key: in.Key, Kind: upgradeKindBinding, Action: UpgradeBlocked, Detail: err.Error()})
		}
	}
	return rep, upgradeRest(ctx, st, rep, dryRun)
}

// upgradePartition upgrades the binding at key and, the first time its
// stream is seen, the stream's head and generation manifests.
func upgradePartition(ctx context.Context, st store.Store, rep *UpgradeReport, key string, seen map[string]bool, dryRun bool) error {
	in := store.ObjectInfo{Key: key}
	var sids []string
	{
		var b Binding
		check := func() error {
			t, p, err := ParseBindingKey(in.Key)
			if err != nil {
				return corrupt(in.Key, "%v", err)
			}
			if b.Topic != t || b.Partition != p {
				return corrupt(in.Key, "names partition %s-%d", b.Topic, b.Partition)
			}
			return nil
		}
		if ok := upgradeOne(ctx, st, rep, in.Key, upgradeKindBinding, &b, check, dryRun); ok && !seen[b.StreamID] {
			seen[b.StreamID] = true
			sids = append(sids, b.StreamID)
		}
	}
	for _, sid := range sids {
		var h Head
		key := HeadKey(sid)
		upgradeOne(ctx, st, rep, key, upgradeKindHead, &h, func() error {
			if h.StreamID != sid {
				return corrupt(key, "names stream %s", h.StreamID)
			}
			return nil
		}, dryRun)
		gens, err := st.List(ctx, GenerationsPrefix(sid))
		if err != nil {
			return fmt.Errorf("store upgrade: list %s: %w", GenerationsPrefix(sid), err)
		}
		for _, in := range gens {
			n, err := ParseGenerationKey(in.Key)
			if err != nil {
				rep.Scanned++
				rep.Counts[UpgradeRefused]++
				rep.Items = append(rep.Items, UpgradeItem{Key: in.Key, Kind: upgradeKindManifest, Action: UpgradeRefused,
					Detail: fmt.Sprintf("%s is not a generation manifest: %v", in.Key, err)})
				continue
			}
			var g Generation
			upgradeOne(ctx, st, rep, in.Key, upgradeKindManifest, &g, func() error {
				if g.StreamID != sid || g.Gen != n {
					return corrupt(in.Key, "names stream %s generation %d", g.StreamID, g.Gen)
				}
				return nil
			}, dryRun)
		}
	}
	return nil
}

// upgradeRest upgrades the quarantine records and the leases.
func upgradeRest(ctx context.Context, st store.Store, rep *UpgradeReport, dryRun bool) error {
	for _, prefix := range []string{QuarantinePrefix, LeasesPrefix} {
		infos, err := st.List(ctx, prefix)
		if err != nil {
			return fmt.Errorf("store upgrade: list %s: %w", prefix, err)
		}
		for _, in := range infos {
			if !strings.HasSuffix(in.Key, ".json") {
				continue
			}
			if prefix == QuarantinePrefix {
				upgradeOne(ctx, st, rep, in.Key, upgradeKindQuarant, &Quarantine{}, nil, dryRun)
			} else {
				upgradeOne(ctx, st, rep, in.Key, upgradeKindLease, &Lease{}, nil, dryRun)
			}
		}
	}
	return nil
}

// upgradeOne reads, checks and (unless dryRun) rewrites one document; it
// reports whether v holds a valid decoded document.
func upgradeOne(ctx context.Context, st store.Store, rep *UpgradeReport, key, kind string, v interface{ Validate() error }, check func() error, dryRun bool) bool {
	rep.Scanned++
	add := func(action, detail string) {
		rep.Counts[action]++
		if action != UpgradeCurrent {
			rep.Items = append(rep.Items, UpgradeItem{Key: key, Kind: kind, Action: action, Detail: detail})
		}
	}
	data, err := store.GetCapped(ctx, st, key, MaxDocumentBytes)
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			add(UpgradeRefused, corrupt(key, "larger than %d bytes", MaxDocumentBytes).Error())
		} else {
			add(UpgradeUnreadable, fmt.Sprintf("read %s: %v", key, err))
		}
		return false
	}
	hasDigest, err := decodeFull(key, data, v)
	legacy := errors.Is(err, ErrLegacyDocument)
	if err != nil && !legacy {
		add(UpgradeRefused, err.Error())
		return false
	}
	if check != nil {
		if err := check(); err != nil {
			add(UpgradeRefused, err.Error())
			return false
		}
	}
	if !legacy {
		if _, tolerated := v.(legacyTolerated); tolerated && !hasDigest {
			add(UpgradeKept, "immutable and referenced by the SHA-256 of its bytes; left without a digest")
			return true
		}
		add(UpgradeCurrent, "")
		return true
	}
	if dryRun {
		add(UpgradeWould, "")
		return true
	}
	want := Encode(v)
	_, err = st.Put(ctx, key, want, store.IfMatch(store.ETagOf(data)))
	if err == nil {
		add(UpgradeUpgraded, "")
		return true
	}
	if errors.Is(err, store.ErrPreconditionFailed) {
		// Lost response or another writer: the stored bytes decide.
		if cur, gerr := store.GetCapped(ctx, st, key, MaxDocumentBytes); gerr == nil && string(cur) == string(want) {
			add(UpgradeUpgraded, "")
			return true
		}
		add(UpgradeChanged, fmt.Sprintf("upgrade %s: it changed since it was read", key))
		return true
	}
	add(UpgradeUnreadable, fmt.Sprintf("upgrade %s: %v", key, err))
	return true
}
