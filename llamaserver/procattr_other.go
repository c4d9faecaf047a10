//go:build !linux

package llamaserver

import "syscall"

// procAttr: only Linux can tie a child's life to its parent's; the server is x86_64 Linux's anyway.
func procAttr() *syscall.SysProcAttr { return nil }
