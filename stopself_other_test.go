//go:build !linux && unix

package main

import (
	"os"
	"syscall"
)

// stopSelf stops this process (SIGSTOP).
func stopSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }
