package cmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext is the run's context: cancelled by the first SIGINT or
// SIGTERM, after which the run exits 130 with "interrupted: rerun the same
// command to resume"; a second one kills the process at once (the default
// action, restored). main builds its context with it, and so does the
// end-to-end tests' binary when it runs as nereusctl.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
