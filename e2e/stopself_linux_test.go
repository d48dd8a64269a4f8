//go:build linux

package e2e

import (
	"runtime"
	"syscall"
)

// stopSelf stops this process (SIGSTOP) before the calling goroutine runs
// on: the signal goes to the calling thread (tgkill), which starts the
// group stop on its way back from the system call. A kill(2) of the
// process may pick another thread for the signal and let this one run on
// for a moment (past a gc's lease proof and into its deletes).
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}
