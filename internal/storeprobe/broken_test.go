package storeprobe

import "github.com/nereusctl/nereusctl/internal/layout"

// Broken returns the checks that failed, in order.
func (r *Result) Broken() []Check { return (&layout.StoreProbe{Checks: r.Checks}).Broken() }
