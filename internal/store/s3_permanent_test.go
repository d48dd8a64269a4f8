package store

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// An invalid S3 region (one the SDK cannot put in an endpoint host name:
// "us east 1") is refused at open, naming it: before, every request failed
// at endpoint resolution and was retried 6 times with WARN lines.
func TestS3InvalidRegionRefusedAtOpen(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	for _, r := range []string{"us east 1", "us-east-1/", "-us", "eu_west_1"} {
		_, err := Open(context.Background(), "s3://bucket/p", OpenOptions{S3Region: r})
		if err == nil || !strings.Contains(err.Error(), "region") || !strings.Contains(err.Error(), r) {
			t.Fatalf("region %q: %v, want a refusal naming it", r, err)
		}
	}
	for _, r := range []string{"us-east-1", "eu-central-2", "garage", "local.test"} {
		st, err := Open(context.Background(), "s3://bucket/p", OpenOptions{S3Region: r, S3Endpoint: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatalf("region %q: %v", r, err)
		}
		if c, ok := st.(Closer); ok {
			c.Close()
		}
	}
}

// An SDK failure before the request is sent (parameters, endpoint
// resolution, signing inputs) is permanent: mapErr marks it so, and
// WithRetry makes one attempt. A failure to send, any response, and the
// context ending stay as they were.
func TestS3NeverSentIsPermanent(t *testing.T) {
	s := &S3{bucket: "b"}
	op := func(err error) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: err}
	}
	resp := &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 500}}, Err: errors.New("internal")}
	for _, c := range []struct {
		name      string
		err       error
		permanent bool
	}{
		{"endpoint resolution", op(errors.New("resolve auth scheme: invalid input region us east 1")), true},
		{"serialization", op(&smithy.SerializationError{Err: errors.New("bad")}), true},
		{"send failure", op(&smithyhttp.RequestSendError{Err: errors.New("connection reset")}), false},
		{"a 500", op(resp), false},
		{"deserialization", op(&smithy.DeserializationError{Err: errors.New("truncated")}), false},
		{"cancelled", op(context.Canceled), false},
		{"deadline", op(context.DeadlineExceeded), false},
		{"canceled error", op(&smithy.CanceledError{Err: context.Canceled}), false},
	} {
		got := s.mapErr("get", "k", None(), c.err)
		if IsPermanent(got) != c.permanent {
			t.Errorf("%s: permanent %v, want %v (%v)", c.name, IsPermanent(got), c.permanent, got)
		}
		attempts := 0
		r := WithRetry(nil, RetryPolicy{Attempts: 6, Initial: time.Microsecond, Max: time.Microsecond})
		_, _ = r.do(context.Background(), "get", "k", func() error { attempts++; return got })
		if want := map[bool]int{true: 1, false: 6}[c.permanent]; c.name != "cancelled" && c.name != "deadline" && c.name != "canceled error" && attempts != want {
			t.Errorf("%s: %d attempts, want %d", c.name, attempts, want)
		}
	}
}
