// Command nereusctl is the operations toolkit for Nereus, the storage layer
// that keeps Kafka partition data as streams on object storage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nereusctl/nereusctl/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
