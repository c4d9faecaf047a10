package bench

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// epollLoop is rawConnLoop read another way: the connections' sockets are taken out of Go's poller
// and watched by epoll instances of plload's own (one per P), each itself watched by Go's poller, so
// a loop goroutine wakes once for every batch of ready sockets and reads each once — no empty read
// before parking, no goroutine woken per chunk. It priced that design before the engine took it
// (engine/h1client/poller.go) and stays as the floor under it. Its sockets leave Go's poller
// altogether; plload's stay in it (their requests are written there), which measured about 10 %
// dearer here.
func epollLoop(base string, streams int, span time.Duration) chunkCostResult {
	u, _ := url.Parse(base)
	req := fmt.Appendf(nil, "POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Path, u.Host, len(bareBody), bareBody)
	var chunks, errs atomic.Int64
	deadline := time.Now().Add(span)
	cpu0 := processCPUNs()
	nLoops := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for l := range nLoops {
		n := streams / nLoops
		if l < streams%nLoops {
			n++
		}
		wg.Go(func() {
			if err := epollOne(u.Host, req, n, deadline, &chunks); err != nil {
				fmt.Fprintln(os.Stderr, "epoll loop:", err)
				errs.Add(1)
			}
		})
	}
	wg.Wait()
	return chunkCostResult{CPUNs: processCPUNs() - cpu0, Chunks: chunks.Load(), Errors: errs.Load()}
}

func processCPUNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

type epollConn struct {
	fd   int
	pend []byte // an unfinished line
	done bool   // [DONE] seen: the answer ends with its chunked terminator
	last time.Time
}

func epollOne(addr string, req []byte, n int, deadline time.Time, chunks *atomic.Int64) error {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		return err
	}
	ep := os.NewFile(uintptr(epfd), "epoll")
	defer ep.Close()
	conns := map[int]*epollConn{}
	for range n {
		fd, err := detachedConn(addr)
		if err != nil {
			return err
		}
		c := &epollConn{fd: fd}
		conns[fd] = c
		if _, err := syscall.Write(fd, req); err != nil {
			return err
		}
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return err
		}
	}
	rc, err := ep.SyscallConn()
	if err != nil {
		return err
	}
	events := make([]syscall.EpollEvent, 128)
	buf := make([]byte, 16<<10)
	var loopErr error
	rerr := rc.Read(func(uintptr) bool {
		for {
			k, err := syscall.EpollWait(epfd, events, 0)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				loopErr = err
				return true
			}
			if k == 0 {
				return len(conns) == 0
			}
			for _, ev := range events[:k] {
				c := conns[int(ev.Fd)]
				m, err := syscall.Read(c.fd, buf)
				if err == syscall.EAGAIN {
					continue
				}
				if err != nil || m == 0 {
					loopErr = fmt.Errorf("read: %v (%d bytes)", err, m)
					return true
				}
				c.last = time.Now()
				if finished := c.feed(buf[:m], chunks); finished {
					if time.Now().After(deadline) {
						syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
						syscall.Close(c.fd)
						delete(conns, c.fd)
						continue
					}
					if _, err := syscall.Write(c.fd, req); err != nil {
						loopErr = err
						return true
					}
				}
			}
		}
	})
	if loopErr != nil {
		return loopErr
	}
	return rerr
}

// feed takes a read's bytes and says whether the answer is complete.
func (c *epollConn) feed(b []byte, chunks *atomic.Int64) bool {
	if len(c.pend) > 0 {
		b = append(c.pend, b...)
		c.pend = c.pend[:0]
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.pend = append(c.pend[:0], b...)
			return false
		}
		line := b[:i+1]
		b = b[i+1:]
		if isContentLine(line) {
			chunks.Add(1)
		}
		if bytes.HasPrefix(line, []byte("data: [DONE]")) {
			c.done = true
		}
		if c.done && bytes.Equal(line, []byte("0\r\n")) {
			c.done = false
			c.pend = c.pend[:0]
			return true // the final CRLF follows in the same read on this mock
		}
	}
	return false
}

// detachedConn dials addr and returns a non-blocking socket that Go's poller no longer watches.
func detachedConn(addr string) (int, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return -1, err
	}
	defer nc.Close() // Go's poller forgets the socket (EPOLL_CTL_DEL), the duplicate keeps it open
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	raw.Control(func(s uintptr) { fd, derr = syscall.Dup(int(s)) })
	if derr != nil {
		return -1, derr
	}
	syscall.CloseOnExec(fd)
	return fd, syscall.SetNonblock(fd, true)
}
