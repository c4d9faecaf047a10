//go:build !linux

package engine

import "errors"

// pollLoop has no epoll to serve outside Linux: the client reads each body on its own goroutine.
type pollLoop struct{ woke bool }

func startPollLoop() (*pollLoop, error) {
	return nil, errors.New("plload's poller needs Linux's epoll")
}

func (l *pollLoop) add(*polledBody) error { return errors.New("plload's poller needs Linux's epoll") }

func (l *pollLoop) remove(*polledBody) {}

func (l *pollLoop) probe(*readLag) {}
