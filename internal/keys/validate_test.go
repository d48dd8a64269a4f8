package keys

import (
	"testing"
)

// FuzzPlainKeyAgreesWithTheRules: Validate's one-pass fast path
// accepts a key only if the rule-by-rule check accepts it, and accepts
// every printable-ASCII key the rules accept (so the keys nereusctl makes
// never take the slow path).
func FuzzPlainKeyAgreesWithTheRules(f *testing.F) {
	for _, k := range []string{
		"streams/s-d58b946533805136/objects/00000000000000000000-00000000000000000010.kb",
		"bindings/orders/0.json", "a", "a/b", "/a", "a/", "a//b", "a/./b", "a/../b", ".", "..", "./a", "a/.", "a/..",
		"a\\b", "a\x00b", "a\x1fb", "a\x7fb", "é/x", "a/\xff", "...", "a/...", ".a/b.", "",
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		fast, full := plainKey(key), validateKeyFull(key)
		if fast && full != nil {
			t.Fatalf("fast path accepts %q, the rules refuse it: %v", key, full)
		}
		ascii := true
		for i := 0; i < len(key); i++ {
			if key[i] >= 0x80 {
				ascii = false
			}
		}
		if ascii && full == nil && !fast {
			t.Fatalf("the rules accept the ASCII key %q, the fast path does not", key)
		}
		if got := Validate(key); (got == nil) != (full == nil) || (got != nil && got.Error() != full.Error()) {
			t.Fatalf("ValidateKey(%q) = %v, the rules say %v", key, got, full)
		}
	})
}
