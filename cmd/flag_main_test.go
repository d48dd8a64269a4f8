package cmd

import (
	"testing"

	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
)

// TestMain stops the shared S3 server the S3 tests start (versitygw).
func TestMain(m *testing.M) { s3server.Main(m) }
