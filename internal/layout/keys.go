// Package layout owns layout v1 of a Nereus store (docs/design.md §3): the object
// keys, the JSON documents (binding, stream head, generation manifest,
// quarantine record, lease) with their validation and JSON schemas, and the
// guarded read-modify-write helpers for the mutable ones.
//
// It never decides what data means (that is replay, compaction, retention);
// it only names, parses, validates and CASes documents.
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nereusctl/nereusctl/internal/kafka"
)

// Key prefixes of layout v1.
const (
	BindingsPrefix   = "bindings/"
	StreamsPrefix    = "streams/"
	QuarantinePrefix = "quarantine/"
	TasksPrefix      = "tasks/"
	LeasesPrefix     = "leases/"
)

// offsetWidth zero-pads offsets in keys so that lexical order is offset order.
const offsetWidth = 20

// BindingKey is bindings/<topic>/<partition>.json.
func BindingKey(topic string, partition int32) string {
	return fmt.Sprintf("%s%s/%d.json", BindingsPrefix, topic, partition)
}

// ParseBindingKey is the inverse of BindingKey.
func ParseBindingKey(key string) (topic string, partition int32, err error) {
	rest, ok := strings.CutPrefix(key, BindingsPrefix)
	if !ok || !strings.HasSuffix(rest, ".json") {
		return "", 0, fmt.Errorf("parse binding key %q: not bindings/<topic>/<partition>.json", key)
	}
	topic, pstr, ok := strings.Cut(strings.TrimSuffix(rest, ".json"), "/")
	if !ok {
		return "", 0, fmt.Errorf("parse binding key %q: no partition", key)
	}
	p, err := strconv.ParseInt(pstr, 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != pstr {
		return "", 0, fmt.Errorf("parse binding key %q: bad partition %q", key, pstr)
	}
	if err := kafka.ValidateTopic(topic); err != nil {
		return "", 0, fmt.Errorf("parse binding key %q: %w", key, err)
	}
	return topic, int32(p), nil
}

// StreamPrefix is streams/<sid>/.
func StreamPrefix(sid string) string { return StreamsPrefix + sid + "/" }

// HeadKey is streams/<sid>/head.json.
func HeadKey(sid string) string { return StreamPrefix(sid) + "head.json" }

// ObjectsPrefix is streams/<sid>/objects/.
func ObjectsPrefix(sid string) string { return StreamPrefix(sid) + "objects/" }

// ObjectKey is streams/<sid>/objects/<base>-<end>.kb for offsets [base, end).
func ObjectKey(sid string, base, end int64) string {
	return fmt.Sprintf("%s%0*d-%0*d.kb", ObjectsPrefix(sid), offsetWidth, base, offsetWidth, end)
}

// ParseObjectKey returns the offset range [base, end) of an object key.
func ParseObjectKey(key string) (base, end int64, err error) {
	i := strings.LastIndexByte(key, '/')
	name := key[i+1:]
	stem, ok := strings.CutSuffix(name, ".kb")
	if !ok {
		return 0, 0, fmt.Errorf("parse object key %q: not <base>-<end>.kb", key)
	}
	a, b, ok := strings.Cut(stem, "-")
	if !ok || len(a) != offsetWidth || len(b) != offsetWidth {
		return 0, 0, fmt.Errorf("parse object key %q: not <base>-<end>.kb with 20-digit offsets", key)
	}
	base, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || base < 0 || end <= base {
		return 0, 0, fmt.Errorf("parse object key %q: bad offset range", key)
	}
	return base, end, nil
}

// GenerationsPrefix is streams/<sid>/generations/.
func GenerationsPrefix(sid string) string { return StreamPrefix(sid) + "generations/" }

// GenerationKey is streams/<sid>/generations/<gen>.json.
func GenerationKey(sid string, gen int64) string {
	return fmt.Sprintf("%s%0*d.json", GenerationsPrefix(sid), offsetWidth, gen)
}

// ParseGenerationKey returns the generation number of a manifest key.
func ParseGenerationKey(key string) (int64, error) {
	i := strings.LastIndexByte(key, '/')
	stem, ok := strings.CutSuffix(key[i+1:], ".json")
	if !ok || len(stem) != offsetWidth {
		return 0, fmt.Errorf("parse generation key %q: not <gen>.json", key)
	}
	g, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || g < 0 {
		return 0, fmt.Errorf("parse generation key %q: bad generation number", key)
	}
	return g, nil
}

// CheckpointsPrefix is streams/<sid>/checkpoints/.
func CheckpointsPrefix(sid string) string { return StreamPrefix(sid) + "checkpoints/" }

// CheckpointKey is streams/<sid>/checkpoints/<anchor>-<root12>.nkc1, where
// root12 is the first 12 hex digits of the checkpoint root.
func CheckpointKey(sid string, anchor int64, rootHex string) string {
	if len(rootHex) > 12 {
		rootHex = rootHex[:12]
	}
	return fmt.Sprintf("%s%0*d-%s.nkc1", CheckpointsPrefix(sid), offsetWidth, anchor, rootHex)
}

// ParseCheckpointKey returns the anchor and root prefix of a checkpoint key.
func ParseCheckpointKey(key string) (anchor int64, root12 string, err error) {
	i := strings.LastIndexByte(key, '/')
	stem, ok := strings.CutSuffix(key[i+1:], ".nkc1")
	if !ok {
		return 0, "", fmt.Errorf("parse checkpoint key %q: not <anchor>-<root12>.nkc1", key)
	}
	a, r, ok := strings.Cut(stem, "-")
	if !ok || len(a) != offsetWidth || len(r) != 12 || !isHex(r) {
		return 0, "", fmt.Errorf("parse checkpoint key %q: not <anchor>-<root12>.nkc1", key)
	}
	anchor, err = strconv.ParseInt(a, 10, 64)
	if err != nil || anchor < 0 {
		return 0, "", fmt.Errorf("parse checkpoint key %q: bad anchor", key)
	}
	return anchor, r, nil
}

// QuarantineKey is quarantine/<set_id>.json.
func QuarantineKey(setID string) string { return QuarantinePrefix + setID + ".json" }

// QuarantineArchiveKey is where a repaired quarantine record is archived.
func QuarantineArchiveKey(setID string, repairedAtUnix int64) string {
	return fmt.Sprintf("%sarchive/%s-%d.json", QuarantinePrefix, setID, repairedAtUnix)
}

// LeaseKey is leases/<name>.json.
func LeaseKey(name string) string { return LeasesPrefix + name + ".json" }

// TaskPrefix is tasks/<id>/.
func TaskPrefix(id string) string { return TasksPrefix + id + "/" }

// RetentionTasksPrefix holds the progress of retention runs, one document
// per selection; gc never deletes under it (a run's progress is its
// resume point, whatever its age).
const RetentionTasksPrefix = TasksPrefix + "retention/"

// DemoTasksPrefix holds the demo's record of the options it was started
// with and whether it finished (tasks/demo/seed-<seed>.json): what an
// interrupted demo resumes from. Never garbage, whatever its age.
const DemoTasksPrefix = TasksPrefix + "demo/"

// RetentionProgressKey is tasks/retention/<digest>.json, the store progress
// of a retention run of selection ("--all 1/4", "orders-0 orders-1"):
// digest is the first 16 hex digits of the selection's SHA-256, so every
// shard keeps its own document and a rerun of the same selection finds it.
func RetentionProgressKey(selection string) string {
	sum := sha256.Sum256([]byte(selection))
	return RetentionTasksPrefix + hex.EncodeToString(sum[:8]) + ".json"
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
