package cmd

import (
	"testing"

	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// TestMain stops the shared versitygw gateway the S3 tests start.
func TestMain(m *testing.M) { s3server.Main(m) }
