package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestFilePutDeleteSameFolder: Puts and Deletes of sibling keys at once
// (partition leases of one topic: leases/partitions/<topic>/<p>.json) never
// fail: a Delete that drops the folder it emptied while a Put is creating
// it makes the Put create it again, not report "object not found".
func TestFilePutDeleteSameFolder(t *testing.T) {
	f, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("leases/partitions/t/%d.json", w)
			for i := 0; i < 300; i++ {
				if _, err := f.Put(ctx, key, []byte("x"), IfAbsent()); err != nil {
					errs <- fmt.Errorf("put %d: %w", i, err)
					return
				}
				if err := f.Delete(ctx, key, None()); err != nil {
					errs <- fmt.Errorf("delete %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
