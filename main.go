// Command nereusctl is the operations toolkit for Nereus, the storage layer
// that keeps Kafka partition data as streams on object storage.
package main

import (
	"context"
	"os"
	"runtime/pprof"

	"github.com/nereusctl/nereusctl/cmd"
)

func main() {
	// NEREUSCTL_CPUPROFILE=FILE writes a CPU profile of the run (for
	// `go tool pprof`), to look into a slow job.
	var profile *os.File
	if path := os.Getenv("NEREUSCTL_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			profile = f
		}
	}
	code := run()
	if profile != nil {
		pprof.StopCPUProfile()
		profile.Close()
	}
	os.Exit(code)
}

func run() int {
	ctx, stop := cmd.SignalContext(context.Background())
	defer stop()
	return cmd.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
}
