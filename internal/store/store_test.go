package store_test

import (
	"testing"

	"github.com/nereusctl/nereusctl/internal/store"
	"github.com/nereusctl/nereusctl/internal/testutil/s3server"
	"github.com/nereusctl/nereusctl/internal/testutil/storetest"
)

// TestMain starts SeaweedFS in the background (slow to start) and stops
// the shared S3 servers after the tests.
func TestMain(m *testing.M) { s3server.Main(m, s3server.SeaweedFS) }

func TestMemConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMem(t.Name()) })
}
