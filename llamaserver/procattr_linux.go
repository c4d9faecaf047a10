package llamaserver

import "syscall"

// procAttr makes the kernel kill the server when the test process that started it dies (a panic, a
// timeout, a killed `go test`), so no llama-server outlives its tests.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
