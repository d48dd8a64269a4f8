package layout

import "github.com/nereusctl/nereusctl/internal/keys"

// The key names of layout v1 are package keys' (bytes and names only, which
// the format packages use without the store); layout re-exports them for
// the code that reads and writes the documents under them.

// Key prefixes of layout v1.
const (
	BindingsPrefix   = keys.BindingsPrefix
	StreamsPrefix    = keys.StreamsPrefix
	QuarantinePrefix = keys.QuarantinePrefix
	TasksPrefix      = keys.TasksPrefix
	LeasesPrefix     = keys.LeasesPrefix
	DeletedPrefix    = keys.DeletedPrefix
	// RetentionTasksPrefix holds the progress of retention runs, one
	// document per selection; gc never deletes under it.
	RetentionTasksPrefix = keys.RetentionTasksPrefix
)

// BindingKey is keys.BindingKey.
func BindingKey(topic string, partition int32) string { return keys.BindingKey(topic, partition) }

// ParseBindingKey is keys.ParseBindingKey.
func ParseBindingKey(key string) (topic string, partition int32, err error) {
	return keys.ParseBindingKey(key)
}

// StreamPrefix is keys.StreamPrefix.
func StreamPrefix(sid string) string { return keys.StreamPrefix(sid) }

// HeadKey is keys.HeadKey.
func HeadKey(sid string) string { return keys.HeadKey(sid) }

// ProofKey is keys.ProofKey.
func ProofKey(sid string) string { return keys.ProofKey(sid) }

// ObjectsPrefix is keys.ObjectsPrefix.
func ObjectsPrefix(sid string) string { return keys.ObjectsPrefix(sid) }

// ObjectKey is keys.ObjectKey.
func ObjectKey(sid string, base, end int64) string { return keys.ObjectKey(sid, base, end) }

// ParseObjectKey is keys.ParseObjectKey.
func ParseObjectKey(key string) (base, end int64, err error) { return keys.ParseObjectKey(key) }

// GenerationsPrefix is keys.GenerationsPrefix.
func GenerationsPrefix(sid string) string { return keys.GenerationsPrefix(sid) }

// GenerationKey is keys.GenerationKey.
func GenerationKey(sid string, gen int64) string { return keys.GenerationKey(sid, gen) }

// ParseGenerationKey is keys.ParseGenerationKey.
func ParseGenerationKey(key string) (int64, error) { return keys.ParseGenerationKey(key) }

// CompactedPrefix is keys.CompactedPrefix.
func CompactedPrefix(sid string) string { return keys.CompactedPrefix(sid) }

// CompactedKey is keys.CompactedKey.
func CompactedKey(sid, sha256 string) string { return keys.CompactedKey(sid, sha256) }

// DeletionKey is keys.DeletionKey.
func DeletionKey(sid string) string { return keys.DeletionKey(sid) }

// ParseDeletionKey is keys.ParseDeletionKey.
func ParseDeletionKey(key string) (string, error) { return keys.ParseDeletionKey(key) }

// ParseQuarantineKey is keys.ParseQuarantineKey.
func ParseQuarantineKey(key string) (string, error) { return keys.ParseQuarantineKey(key) }

// CheckpointsPrefix is keys.CheckpointsPrefix.
func CheckpointsPrefix(sid string) string { return keys.CheckpointsPrefix(sid) }

// CheckpointKey is keys.CheckpointKey.
func CheckpointKey(sid string, anchor int64, rootHex string) string {
	return keys.CheckpointKey(sid, anchor, rootHex)
}

// ParseCheckpointKey is keys.ParseCheckpointKey.
func ParseCheckpointKey(key string) (anchor int64, root12 string, err error) {
	return keys.ParseCheckpointKey(key)
}

// QuarantineKey is keys.QuarantineKey.
func QuarantineKey(setID string) string { return keys.QuarantineKey(setID) }

// QuarantineArchiveKey is keys.QuarantineArchiveKey.
func QuarantineArchiveKey(setID string, repairedAtUnix int64) string {
	return keys.QuarantineArchiveKey(setID, repairedAtUnix)
}

// LeaseKey is keys.LeaseKey.
func LeaseKey(name string) string { return keys.LeaseKey(name) }

// TaskPrefix is keys.TaskPrefix.
func TaskPrefix(id string) string { return keys.TaskPrefix(id) }

// CompactionTaskPrefix is keys.CompactionTaskPrefix.
func CompactionTaskPrefix(sid string) string { return keys.CompactionTaskPrefix(sid) }

// CompactionTaskKey is keys.CompactionTaskKey.
func CompactionTaskKey(sid string) string { return keys.CompactionTaskKey(sid) }

// DemoTasksPrefix is keys.DemoTasksPrefix.
const DemoTasksPrefix = keys.DemoTasksPrefix

// RetentionProgressKey is keys.RetentionProgressKey.
func RetentionProgressKey(selection string) string { return keys.RetentionProgressKey(selection) }

func isHex(s string) bool { return keys.IsHex(s) }
