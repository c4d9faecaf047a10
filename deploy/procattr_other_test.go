//go:build !linux

package deploy

import "syscall"

// childAttr: only Linux ties a child's life to its parent's; elsewhere the cleanup kills them.
func childAttr() *syscall.SysProcAttr { return nil }
