package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/plload/plload/workload"
)

// JoinOptions say which coordinator a shard joins and as what.
type JoinOptions struct {
	// Addr is the coordinator's host:port (--coordinator); an http:// URL is accepted too.
	Addr string
	// Token is the shared secret (from --token-env), "" when the coordinator has none.
	Token string
	// Shard is this shard's index and count; the count must be the coordinator's --shards.
	Shard workload.Shard
	// ScenarioSHA is ScenarioSHA of the scenario this shard runs.
	ScenarioSHA string
	// Timeout bounds the wait for every shard to join and each stage barrier (--join-timeout,
	// default 60s).
	Timeout time.Duration
}

// clockRounds is how many NTP-style exchanges the offset is taken from (the one of least RTT).
const clockRounds = 16

// Member is one shard's place at the coordinator: its clock offset and the stage barriers.
type Member struct {
	opts   JoinOptions
	url    string
	client *http.Client
	// base and baseNs map a local time.Time (its monotonic reading) to wall-clock ns: a wall-clock
	// step mid-run moves neither the measurement nor the start instants.
	base   time.Time
	baseNs int64
	offset int64 // coordinator − local, ns
	uncert int64 // half the best round's RTT, ns

	// detach ends the attach connection (held from the join to the leave, so the coordinator knows
	// at once when this process dies); attached is closed when it has ended.
	detach   context.CancelFunc
	attached chan struct{}

	mu   sync.Mutex
	lost []int // the shards the coordinator had given up at the last barrier

	closeOnce sync.Once
	closeErr  error
}

// RefusedError is the coordinator's answer to a request it refused or a wait that failed; Message
// says why and Missing names the shard indexes a failed barrier waited for.
type RefusedError struct {
	Addr    string
	Status  int
	Message string
	Missing []int
}

func (e *RefusedError) Error() string { return fmt.Sprintf("coordinator %s: %s", e.Addr, e.Message) }

// Join joins the coordinator, measures this shard's clock offset and waits until all N shards have
// joined (or Timeout, or ctx).
func Join(ctx context.Context, o JoinOptions) (*Member, error) {
	if o.Addr == "" {
		return nil, errors.New("join: no coordinator address; accepted: --coordinator host:port")
	}
	if o.Shard.Count < 1 || o.Shard.Index < 0 || o.Shard.Index >= o.Shard.Count {
		return nil, fmt.Errorf("join: shard %d/%d; accepted: 0 ≤ index < count", o.Shard.Index, o.Shard.Count)
	}
	if o.ScenarioSHA == "" {
		return nil, errors.New("join: no scenario sha256 (cluster.ScenarioSHA)")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultJoinTimeout
	}
	url := strings.TrimRight(o.Addr, "/")
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	m := &Member{opts: o, url: url, base: time.Now(),
		// No proxy: a cluster's HTTP_PROXY must not carry the barrier (nor see the token); no
		// redirect either, which would take the token to another port or server.
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	m.baseNs = m.base.UnixNano()
	if err := m.join(ctx); err != nil {
		m.client.CloseIdleConnections()
		return nil, fmt.Errorf("joining as shard %s: %w", o.Shard, err)
	}
	m.attach()
	if err := m.measure(ctx); err != nil {
		m.release()
		return nil, fmt.Errorf("measuring shard %s's clock: %w", o.Shard, err)
	}
	if _, err := m.wait(ctx, joinStage); err != nil {
		m.release()
		return nil, fmt.Errorf("waiting for every shard to join: %w", err)
	}
	return m, nil
}

// attach opens the connection the coordinator watches until Close (pathAttach). It is not the
// barrier's: a barrier answer never waits behind it. It returns once the coordinator has answered
// the attach (or after attachWait): a shard that dies at once after Join is then seen dropping,
// not only missing the next barrier by its bound.
func (m *Member) attach() {
	ctx, cancel := context.WithCancel(context.Background())
	m.detach, m.attached = cancel, make(chan struct{})
	answered := make(chan struct{})
	go func() {
		defer close(m.attached)
		defer closeOnce(answered)
		b, _ := json.Marshal(leaveRequest{Index: m.opts.Shard.Index})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+pathAttach, bytes.NewReader(b))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if m.opts.Token != "" {
			req.Header.Set(TokenHeader, "Bearer "+m.opts.Token)
		}
		resp, err := m.client.Do(req)
		if err != nil {
			return // the barrier's bound still covers a coordinator this shard cannot hold a line to
		}
		closeOnce(answered)
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	t := time.NewTimer(attachWait)
	defer t.Stop()
	select {
	case <-answered:
	case <-t.C: // a slow coordinator: the barrier's bound covers this shard meanwhile
	}
}

// attachWait bounds how long Join waits for the coordinator to answer the attach.
const attachWait = 10 * time.Second

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// release ends the attach connection and waits for it, then closes the idle ones.
func (m *Member) release() {
	if m.detach != nil {
		m.detach()
		<-m.attached
	}
	m.client.CloseIdleConnections()
}

// Lost names the shards the coordinator had given up (lost) when the last barrier opened: this
// shard's stages ran without them.
func (m *Member) Lost() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.lost...)
}

// join sends the join request, again while the coordinator cannot be reached at all — on a cluster
// the shards' pods may start before the coordinator's, or before its name resolves — with a backoff
// from 100 ms to 2 s, for at most the join timeout. A coordinator that answers and refuses is final.
func (m *Member) join(ctx context.Context) error {
	o := m.opts
	deadline := time.Now().Add(o.Timeout)
	wait := 100 * time.Millisecond
	for {
		err := m.post(ctx, pathJoin, joinRequest{Index: o.Shard.Index, Count: o.Shard.Count, ScenarioSHA: o.ScenarioSHA}, nil, time.Until(deadline))
		var refused *RefusedError
		if err == nil || errors.As(err, &refused) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// local is t on the local wall clock in ns, advanced by the monotonic clock from base.
func (m *Member) local(t time.Time) int64 { return m.baseNs + int64(t.Sub(m.base)) }

// measure runs the NTP-style exchange: offset = t2 − (t1 + t3)/2 of the round with the least RTT,
// uncertainty = half that RTT (the coordinator read its clock somewhere inside the round).
func (m *Member) measure(ctx context.Context) error {
	best := int64(-1)
	for range clockRounds {
		var r clockReply
		t1 := time.Now()
		if err := m.post(ctx, pathClock, struct{}{}, &r, m.opts.Timeout); err != nil {
			return err
		}
		t3 := time.Now()
		rtt := int64(t3.Sub(t1))
		if best < 0 || rtt < best {
			best = rtt
			l1, l3 := m.local(t1), m.local(t3)
			m.offset = r.NowNs - (l1 + (l3-l1)/2)
			m.uncert = rtt / 2
		}
	}
	return nil
}

// StageStart waits at stage's barrier until every shard has arrived and returns the stage's start
// instant on the local clock (a time.Time with a monotonic reading: time.Until it is safe).
func (m *Member) StageStart(ctx context.Context, stage int) (time.Time, error) {
	if stage < 0 {
		return time.Time{}, fmt.Errorf("stage %d; accepted: 0 or more", stage)
	}
	startNs, err := m.wait(ctx, stage)
	if err != nil {
		return time.Time{}, fmt.Errorf("shard %s at stage %d's start: %w", m.opts.Shard, stage, err)
	}
	return m.base.Add(time.Duration(startNs - m.offset - m.baseNs)), nil
}

func (m *Member) wait(ctx context.Context, stage int) (int64, error) {
	var r barrierReply
	// The coordinator answers a barrier it gave up on itself, naming who is missing; the slack lets
	// that answer arrive before this side's own bound.
	err := m.post(ctx, pathBarrier, barrierRequest{Index: m.opts.Shard.Index, Stage: stage}, &r, m.opts.Timeout+5*time.Second)
	if err == nil {
		m.mu.Lock()
		m.lost = r.Lost
		m.mu.Unlock()
	}
	return r.StartNs, err
}

// Offset is this shard's clock offset (coordinator − local) and its uncertainty, in ns.
func (m *Member) Offset() (offsetNs, uncertaintyNs int64) { return m.offset, m.uncert }

// Close tells the coordinator this shard has finished; the coordinator ends when all have.
func (m *Member) Close() error {
	m.closeOnce.Do(func() {
		// Leave first, then drop the attach line: the coordinator must not take the drop for a death.
		m.closeErr = m.post(context.Background(), pathLeave, leaveRequest{Index: m.opts.Shard.Index}, nil, 10*time.Second)
		m.release()
	})
	return m.closeErr
}

// post sends one request bounded by limit and decodes the answer, or the coordinator's refusal.
func (m *Member) post(ctx context.Context, path string, body, out any, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("coordinator %s: %w", m.opts.Addr, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.opts.Token != "" {
		req.Header.Set(TokenHeader, "Bearer "+m.opts.Token)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("coordinator %s: no answer within %s: %w", m.opts.Addr, limit, err)
		}
		return fmt.Errorf("coordinator %s: %w", m.opts.Addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("coordinator %s: reading the answer: %w", m.opts.Addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorReply
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("HTTP %d: %.200s", resp.StatusCode, data)
		}
		return &RefusedError{Addr: m.opts.Addr, Status: resp.StatusCode, Message: e.Error, Missing: e.Missing}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("coordinator %s: the answer is not the JSON expected: %w", m.opts.Addr, err)
		}
	}
	return nil
}
