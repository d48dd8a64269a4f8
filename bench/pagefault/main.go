// Command pagefault measures what first touching fresh memory costs on this
// machine: it allocates 64 MiB, writes one byte per 4 KiB page and prints
// the microseconds per page. bench/run.sh reports it next to the
// compaction figures, whose end-to-end (CLI) run touches some 50 MiB of
// fresh memory: on a virtual machine whose memory the host backs lazily
// this is far from free (about 13 us a page on this project's VM).
package main

import (
	"fmt"
	"runtime"
	"time"
)

func main() {
	const size, page = 64 << 20, 4096
	start := time.Now()
	b := make([]byte, size) // fresh from the OS: untouched until written
	for j := 0; j < len(b); j += page {
		b[j] = 1
	}
	took := time.Since(start)
	fmt.Printf("%.2f\n", float64(took.Nanoseconds())/1e3/float64(size/page))
	runtime.KeepAlive(b) // the writes above must not be optimised away
}
