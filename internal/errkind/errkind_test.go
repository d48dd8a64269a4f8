package errkind

import (
	"errors"
	"fmt"
	"testing"
)

func TestOfThroughWrapping(t *testing.T) {
	corrupt := New(Corrupt, "corrupt")
	blocked := New(Blocked, "blocked")
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, None},
		{"plain", errors.New("x"), None},
		{"sentinel", corrupt, Corrupt},
		{"wrapped sentinel", fmt.Errorf("a: %w", fmt.Errorf("b: %w", corrupt)), Corrupt},
		{"mark over a sentinel", Mark(fmt.Errorf("a: %w", corrupt), Usage), Usage},
		{"hint keeps the kind", Hint(fmt.Errorf("a: %w", corrupt), "do"), Corrupt},
		{"joined: blocked before corrupt", fmt.Errorf("%w %w", corrupt, blocked), Blocked},
		{"joined: corrupt before none", errors.Join(errors.New("x"), corrupt), Corrupt},
		{"finding keeps the kind", About(corrupt, "k", "c"), Corrupt},
		{"mark of None keeps looking", Mark(corrupt, None), Corrupt},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of = %v, want %v", c.name, got, c.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", Mark(corrupt, Usage)), corrupt) {
		t.Error("a mark hides the sentinel from errors.Is")
	}
	if !IsData(New(Missing, "m")) || IsData(blocked) {
		t.Error("IsData")
	}
}

func TestHintOfSearchesTheTree(t *testing.T) {
	inner := MarkHint(errors.New("denied"), None, "check permissions")
	if h := HintOf(fmt.Errorf("outer: %w", Mark(inner, Corrupt))); h != "check permissions" {
		t.Fatalf("HintOf = %q", h)
	}
	if h := HintOf(errors.Join(errors.New("a"), inner)); h != "check permissions" {
		t.Fatalf("HintOf(joined) = %q", h)
	}
	if HintOf(errors.New("x")) != "" || Hint(nil, "x") != nil || Mark(nil, Corrupt) != nil {
		t.Fatal("nil handling")
	}
}

func TestListAndCount(t *testing.T) {
	items := make([]string, 25)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	got := List(items, ",")
	if want := "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,… and 5 more"; got != want {
		t.Fatalf("List = %q", got)
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 249988: "249,988", -1234: "-1,234"} {
		if Count(n) != want {
			t.Errorf("Count(%d) = %q", n, Count(n))
		}
	}
}
