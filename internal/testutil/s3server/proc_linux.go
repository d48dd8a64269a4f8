//go:build linux

package s3server

import "syscall"

// sysProcAttr kills the gateway if the test binary dies without Main's
// cleanup (a panic, a timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
