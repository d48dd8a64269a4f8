package store

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mem is the mem:// backend: objects in a map, for tests. It follows the
// same contract as the real backends, guards included.
type Mem struct {
	name string
	mu   sync.Mutex
	objs map[string]memObj
	now  func() time.Time
}

type memObj struct {
	data []byte
	info ObjectInfo
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty in-memory store named name (for messages).
func NewMem(name string) *Mem {
	return &Mem{name: name, objs: map[string]memObj{}, now: time.Now}
}

// ETagOf returns the hex MD5 of data, the single-part S3 ETag.
func ETagOf(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

// SHA256Of returns the hex SHA-256 of data.
func SHA256Of(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (m *Mem) String() string { return "mem://" + m.name }

func (m *Mem) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return ObjectInfo{}, fmt.Errorf("head %s: %w", key, ErrNotFound)
	}
	return o.info, nil
}

func (m *Mem) Get(ctx context.Context, key string, r *Range) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return sliceRange(o.data, r), nil
}

// sliceRange copies the selected bytes of data.
func sliceRange(data []byte, r *Range) []byte {
	lo, hi := int64(0), int64(len(data))
	if r != nil {
		lo = min(max(r.Offset, 0), hi)
		if r.Length >= 0 && lo+r.Length < hi {
			hi = lo + r.Length
		}
	}
	out := make([]byte, hi-lo)
	copy(out, data[lo:hi])
	return out
}

func (m *Mem) Put(ctx context.Context, key string, data []byte, g Guard) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, exists := m.objs[key]
	if err := checkGuard("put", key, g, exists, cur.info.ETag); err != nil {
		if g.IsIfAbsent() && exists && string(cur.data) == string(data) {
			// Same bytes already there: an idempotent retry.
			return cur.info, nil
		}
		return ObjectInfo{}, err
	}
	b := append([]byte(nil), data...)
	info := ObjectInfo{Key: key, Size: int64(len(b)), ETag: ETagOf(b), SHA256: SHA256Of(b), Modified: m.now()}
	m.objs[key] = memObj{data: b, info: info}
	return info, nil
}

// checkGuard decides a guarded operation against the current state.
func checkGuard(op, key string, g Guard, exists bool, etag string) error {
	if g.IsIfAbsent() && exists {
		return fmt.Errorf("%s %s (%s): %w", op, key, g, ErrPreconditionFailed)
	}
	if want, ok := g.MatchETag(); ok && (!exists || etag != want) {
		return fmt.Errorf("%s %s (%s): %w", op, key, g, ErrPreconditionFailed)
	}
	return nil
}

func (m *Mem) Delete(ctx context.Context, key string, g Guard) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, exists := m.objs[key]
	if g.IsIfAbsent() {
		return fmt.Errorf("delete %s: if-absent is not a delete guard", key)
	}
	if err := checkGuard("delete", key, g, exists, cur.info.ETag); err != nil {
		return err
	}
	delete(m.objs, key)
	return nil
}

func (m *Mem) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	return m.ListAfter(ctx, prefix, "")
}

func (m *Mem) ListAfter(ctx context.Context, prefix, startAfter string) ([]ObjectInfo, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ObjectInfo
	for k, o := range m.objs {
		if strings.HasPrefix(k, prefix) && (startAfter == "" || k > startAfter) {
			out = append(out, o.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
