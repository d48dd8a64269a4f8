// Package keys owns the object keys of a Nereus store: the rules every key
// obeys (checked once, before any I/O, by every store backend) and the
// names of layout v1 (docs/layout.md, "Keys"): where bindings, heads,
// objects, generation manifests, checkpoints, compacted views, quarantine
// and deletion records, leases and tasks live, and their parsers.
//
// It is bytes and names only: no I/O, no documents. The format packages
// (nkc1) and the store import it; layout re-exports the names.
package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nereusctl/nereusctl/internal/errkind"
	"github.com/nereusctl/nereusctl/internal/kafka"
)

// ErrInvalid: the key breaks the key rules (see Validate). It is the
// operator's input where a key comes from an argument (usage), corruption
// where a stored document names it.
var ErrInvalid = errkind.New(errkind.None, "invalid object key")

// MaxLen bounds object keys, as S3 does (1024 bytes).
const MaxLen = 1024

// Validate enforces the key rules every backend applies once, before any
// I/O: non-empty, at most MaxLen bytes, valid UTF-8, no leading "/", no
// empty, "." or ".." segment, no backslash, no NUL or other control
// character. A key that passes can be joined to a file:// root safely.
func Validate(key string) error {
	if plainKey(key) {
		return nil
	}
	return validateKeyFull(key)
}

// plainKey is Validate's one pass over the bytes for the keys nereusctl
// makes (printable ASCII): true only for a key that passes every rule;
// anything else, a non-ASCII key included, is decided and worded by
// validateKeyFull.
func plainKey(key string) bool {
	if key == "" || len(key) > MaxLen || key[0] == '/' {
		return false
	}
	seg := 0 // where the current segment starts
	for i := 0; i <= len(key); i++ {
		if i < len(key) {
			c := key[i]
			if c < 0x20 || c >= 0x7f || c == '\\' {
				return false
			}
			if c != '/' {
				continue
			}
		}
		switch key[seg:i] {
		case "", ".", "..":
			return false
		}
		seg = i + 1
	}
	return true
}

// validateKeyFull is Validate, rule by rule.
func validateKeyFull(key string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrInvalid, Printable(key), why)
	}
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.HasPrefix(key, "/"):
		return bad("absolute path")
	case strings.ContainsRune(key, '\\'):
		return bad("backslash")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return bad("control character")
		}
	}
	// Segment by segment without splitting (no allocation: every store
	// call validates its key).
	for rest, more := key, true; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, "/")
		switch seg {
		case "":
			return bad("empty path segment")
		case ".", "..":
			return bad("relative path segment " + seg)
		}
	}
	return nil
}

// ValidatePrefix applies the key rules to a List prefix; the empty prefix
// and a prefix ending in "/" are allowed.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return Validate(strings.TrimSuffix(prefix, "/") + "/x")
}

// Printable is s as a message shows a key: cut at 80 bytes, control
// characters as "?".
func Printable(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// ValidStreamID checks a stream id: 1..64 characters of [a-z0-9-].
func ValidStreamID(sid string) error {
	if sid == "" || len(sid) > 64 {
		return fmt.Errorf("stream_id %q: want 1..64 characters", sid)
	}
	for _, c := range sid {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Errorf("stream_id %q: want [a-z0-9-]", sid)
		}
	}
	return nil
}

// Key prefixes of layout v1.
const (
	BindingsPrefix   = "bindings/"
	StreamsPrefix    = "streams/"
	QuarantinePrefix = "quarantine/"
	TasksPrefix      = "tasks/"
	LeasesPrefix     = "leases/"
	// DeletedPrefix holds the deletion records of streams whose binding
	// was deleted on purpose (Deletion): gc collects such a stream after
	// its grace, verify tells deletion from loss.
	DeletedPrefix = "deleted/"
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

// ProofKey is streams/<sid>/proof.json, the stream's proof ledger: which
// immutable objects verify --deep proved, and when.
func ProofKey(sid string) string { return StreamPrefix(sid) + "proof.json" }

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

// CompactedPrefix is streams/<sid>/compacted/, where NTC2 views live.
func CompactedPrefix(sid string) string { return StreamPrefix(sid) + "compacted/" }

// CompactedKey is streams/<sid>/compacted/<sha256>.ntc2: content-addressed,
// so a rerun that produces the same bytes writes the same key.
func CompactedKey(sid, sha256 string) string { return CompactedPrefix(sid) + sha256 + ".ntc2" }

// DeletionKey is deleted/<sid>.json, the record that stream sid's binding
// was deleted on purpose.
func DeletionKey(sid string) string { return DeletedPrefix + sid + ".json" }

// ParseDeletionKey returns the stream id of a deletion record's key.
func ParseDeletionKey(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, DeletedPrefix)
	sid, ok2 := strings.CutSuffix(rest, ".json")
	if !ok || !ok2 || ValidStreamID(sid) != nil {
		return "", fmt.Errorf("parse deletion key %q: not deleted/<stream id>.json", key)
	}
	return sid, nil
}

// ParseQuarantineKey returns the set id of a quarantine record's key
// (not an archived one).
func ParseQuarantineKey(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, QuarantinePrefix)
	id, ok2 := strings.CutSuffix(rest, ".json")
	if !ok || !ok2 || len(id) != 64 || !IsHex(id) {
		return "", fmt.Errorf("parse quarantine key %q: not quarantine/<set id>.json", key)
	}
	return id, nil
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
	if !ok || len(a) != offsetWidth || len(r) != 12 || !IsHex(r) {
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

// CompactionTaskPrefix is where the compaction task of stream sid lives
// (tasks/compact-<sid>/): gc collects it with the stream's partition,
// under its lease, never from under a running compaction.
func CompactionTaskPrefix(sid string) string { return TaskPrefix("compact-" + sid) }

// CompactionTaskKey is tasks/compact-<sid>/task.json, an interrupted
// compaction's frozen inputs: while it exists, a TOPIC_COMPACTED
// generation over NONE coverage may be that compaction's unactivated
// output, not lost coverage.
func CompactionTaskKey(sid string) string { return CompactionTaskPrefix(sid) + "task.json" }

// DemoTasksPrefix holds the demo's record of the options it was started
// with and whether it finished (tasks/demo/seed-<seed>.json): what an
// interrupted demo resumes from. Never garbage, whatever its age.
const DemoTasksPrefix = TasksPrefix + "demo/"

// RetentionTasksPrefix holds the progress of retention runs, one document
// per selection; gc never deletes under it (a run's progress is its
// resume point, whatever its age).
const RetentionTasksPrefix = TasksPrefix + "retention/"

// RetentionProgressKey is tasks/retention/<digest>.json, the store progress
// of a retention run of selection ("--all 1/4", "orders-0 orders-1"):
// digest is the first 16 hex digits of the selection's SHA-256, so every
// shard keeps its own document and a rerun of the same selection finds it.
func RetentionProgressKey(selection string) string {
	sum := sha256.Sum256([]byte(selection))
	return RetentionTasksPrefix + hex.EncodeToString(sum[:8]) + ".json"
}

// IsHex reports a non-empty string of lowercase hex digits.
func IsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
