//go:build !linux && unix

package e2e

import (
	"os"
	"syscall"
)

// stopSelf stops this process (SIGSTOP).
func stopSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }
