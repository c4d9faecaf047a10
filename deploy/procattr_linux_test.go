package deploy

import "syscall"

// childAttr makes the kernel kill etcd and kube-apiserver when the test process dies (a panic, a
// -timeout, a killed `go test`), so no server outlives the test that started it.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
