//go:build !linux

package h1client

import (
	"errors"
	"sync/atomic"
)

// pollLoop has no epoll to serve outside Linux: the client reads each body on its own goroutine.
type pollLoop struct{}

func newPollLoop(*atomic.Pointer[ReadLag]) (*pollLoop, error) {
	return nil, errors.New("plload's poller needs Linux's epoll")
}

func (l *pollLoop) start([]*pollLoop) {}

func (l *pollLoop) add(*polledBody) error { return errors.New("plload's poller needs Linux's epoll") }

func (l *pollLoop) remove(*polledBody) {}
