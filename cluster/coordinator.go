package cluster

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// ServeOptions configure the coordinator (plload coordinate): a barrier and a clock for N shards,
// nothing more — it carries no load and sees no records.
type ServeOptions struct {
	// Listen is the address to bind ("127.0.0.1:7070"). Beyond loopback it requires Token.
	Listen string
	// Shards is N: every shard must join with this count.
	Shards int
	// Token is the shared secret every request must carry ("" only on loopback). Never logged.
	Token string
	// JoinTimeout bounds every wait: all N joined (from the start), every stage barrier (from its
	// first arrival), every shard finished (from the first that did). Default 60s.
	JoinTimeout time.Duration
	// Log receives joins, stage starts and failures (nil: discarded).
	Log *slog.Logger

	// Listener, when set, is served instead of binding Listen (tests, or run --coordinate binding
	// early); the loopback rule applies to its address.
	Listener net.Listener
	// Margin is how far after the last arrival a stage starts, so the answer reaches every shard
	// first (default 200ms).
	Margin time.Duration
	// Clock is the coordinator's time in wall-clock Unix ns (nil: the wall clock at start advanced by
	// the monotonic clock, so a wall-clock step mid-run moves nothing). Tests inject a skewed one.
	Clock func() int64
}

// Coordinator is a running coordinator; Serve is Start then Wait.
type Coordinator struct {
	opts  ServeOptions
	addr  string
	srv   *http.Server
	log   *slog.Logger
	token [32]byte // sha256 of the expected header value, so the comparison's time says nothing of its length

	mu       sync.Mutex
	joined   map[int]string // index → the shard's remote address
	sha      string         // the first shard's scenario sha256: every other must match it
	shaFrom  int
	barriers map[int]*barrier
	left     map[int]bool
	at       map[int]int       // index → the last barrier it arrived at (joinStage: none yet)
	lost     map[int]lostShard // shards whose connection dropped or that missed a barrier
	err      error             // the failure, once failed
	finished bool
	done     chan struct{}
	stop     chan struct{} // closed once, when the coordinator ends (success or failure)
}

// barrier is one stage's meeting point (joinStage: every shard joined).
type barrier struct {
	arrived map[int]bool
	done    chan struct{} // closed when startNs or err is set
	startNs int64
	lost    []int // the shards given up when it opened, so the others can say so
	err     *errorReply
	timer   *time.Timer
}

// Serve runs the coordinator until every shard has finished (nil), a wait ran past JoinTimeout or ctx
// ends (an error naming the missing shards).
func Serve(ctx context.Context, opts ServeOptions) error {
	c, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	return c.Wait()
}

// Start checks the options, binds and serves in the background; Addr says where.
func Start(ctx context.Context, opts ServeOptions) (*Coordinator, error) {
	if opts.Shards < 1 {
		return nil, fmt.Errorf("coordinate: --shards %d; accepted: a count of at least 1", opts.Shards)
	}
	if opts.JoinTimeout <= 0 {
		opts.JoinTimeout = DefaultJoinTimeout
	}
	if opts.Margin <= 0 {
		opts.Margin = 200 * time.Millisecond
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		base := time.Now()
		baseNs := base.UnixNano()
		opts.Clock = func() int64 { return baseNs + int64(time.Since(base)) }
	}
	addr := opts.Listen
	if opts.Listener != nil {
		addr = opts.Listener.Addr().String()
	}
	if !IsLoopback(addr) && opts.Token == "" {
		return nil, fmt.Errorf("coordinate: listening on %q (beyond loopback) requires a shared secret; accepted: --token-env VAR naming a variable that holds it (the shards pass the same --token-env), or a loopback address such as 127.0.0.1:7070", addr)
	}
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", opts.Listen); err != nil {
			return nil, fmt.Errorf("coordinate: --listen %s: %w", opts.Listen, err)
		}
	}
	c := &Coordinator{opts: opts, addr: ln.Addr().String(), log: opts.Log, joined: map[int]string{},
		barriers: map[int]*barrier{}, left: map[int]bool{}, at: map[int]int{}, lost: map[int]lostShard{}, done: make(chan struct{}), stop: make(chan struct{})}
	if opts.Token != "" {
		c.token = sha256.Sum256([]byte("Bearer " + opts.Token))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathJoin, c.handleJoin)
	mux.HandleFunc("POST "+pathClock, c.handleClock)
	mux.HandleFunc("POST "+pathBarrier, c.handleBarrier)
	mux.HandleFunc("POST "+pathLeave, c.handleLeave)
	mux.HandleFunc("POST "+pathAttach, c.handleAttach)
	c.srv = &http.Server{Handler: c.authorized(mux), ReadHeaderTimeout: 10 * time.Second}
	c.mu.Lock()
	c.barrierLocked(joinStage) // the join deadline runs from the start
	c.mu.Unlock()
	go c.srv.Serve(ln)
	go func() {
		select {
		case <-ctx.Done():
			c.fail(fmt.Errorf("coordinator stopped: %w", ctx.Err()))
		case <-c.stop:
		}
	}()
	c.log.Info("coordinator listening", "addr", c.addr, "shards", opts.Shards, "join_timeout", opts.JoinTimeout, "token", opts.Token != "")
	return c, nil
}

// Addr is the bound address (host:port).
func (c *Coordinator) Addr() string { return c.addr }

// Wait blocks until the coordinator has ended and returns why (nil: every shard finished).
func (c *Coordinator) Wait() error {
	<-c.done
	return c.err
}

// end records the outcome once and shuts the server down after the answers in flight are written.
func (c *Coordinator) endLocked(err error) {
	if c.finished {
		return
	}
	c.finished, c.err = true, err
	for _, b := range c.barriers {
		b.timer.Stop()
		select {
		case <-b.done:
		default: // a waiting barrier learns why the run failed
			b.err = &errorReply{Error: fmt.Sprint(err)}
			close(b.done)
		}
	}
	close(c.stop)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.srv.Shutdown(ctx)
		close(c.done)
	}()
}

func (c *Coordinator) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.finished {
		c.log.Error("coordinator failed", "err", err)
	}
	c.endLocked(err)
}

// authorized refuses a request without the shared secret, in constant time, before any handler.
func (c *Coordinator) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.opts.Token != "" {
			got := r.Header.Get(TokenHeader)
			if got == "" {
				refuse(w, http.StatusUnauthorized, &errorReply{Error: "this coordinator requires a shared secret and the request carried none; accepted: --token-env VAR on the shard, naming a variable with the coordinator's token"})
				return
			}
			sum := sha256.Sum256([]byte(got))
			if subtle.ConstantTimeCompare(sum[:], c.token[:]) != 1 {
				refuse(w, http.StatusForbidden, &errorReply{Error: "the shard's token does not match the coordinator's; accepted: the same secret in --token-env on both sides"})
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		next.ServeHTTP(w, r)
	})
}

func refuse(w http.ResponseWriter, status int, e *errorReply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(e)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		refuse(w, http.StatusBadRequest, &errorReply{Error: fmt.Sprintf("%s: the body is not the JSON the coordinator reads: %v", r.URL.Path, err)})
		return false
	}
	return true
}

func (c *Coordinator) handleClock(w http.ResponseWriter, _ *http.Request) {
	reply(w, clockReply{NowNs: c.opts.Clock()})
}

func (c *Coordinator) handleJoin(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	if !decode(w, r, &req) {
		return
	}
	status, e := c.join(req, r.RemoteAddr)
	if e != nil {
		c.log.Warn("shard refused", "index", req.Index, "count", req.Count, "remote", r.RemoteAddr, "why", e.Error)
		refuse(w, status, e)
		return
	}
	c.log.Info("shard joined", "index", req.Index, "count", req.Count, "remote", r.RemoteAddr)
	reply(w, struct{}{})
}

// join admits one shard, or says why not (the status and the message the shard prints).
func (c *Coordinator) join(req joinRequest, remote string) (int, *errorReply) {
	n := c.opts.Shards
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.finished:
		return http.StatusConflict, &errorReply{Error: fmt.Sprintf("the coordinator has ended: %v", c.err)}
	case req.Count != n:
		return http.StatusConflict, &errorReply{Error: fmt.Sprintf("shard %d/%d joined a coordinator of %d shards; accepted: --shard INDEX/%d (the coordinator's --shards)", req.Index, req.Count, n, n)}
	case req.Index < 0 || req.Index >= n:
		return http.StatusBadRequest, &errorReply{Error: fmt.Sprintf("shard index %d; accepted: 0 ≤ index < %d", req.Index, n)}
	case req.ScenarioSHA == "":
		return http.StatusBadRequest, &errorReply{Error: "the join carried no scenario sha256"}
	case c.sha != "" && req.ScenarioSHA != c.sha:
		return http.StatusConflict, &errorReply{Error: fmt.Sprintf("shard %d runs scenario sha256 %s but shard %d joined with %s; accepted: the same scenario on every shard (output.* aside)", req.Index, req.ScenarioSHA, c.shaFrom, c.sha)}
	}
	if from, taken := c.joined[req.Index]; taken {
		return http.StatusConflict, &errorReply{Error: fmt.Sprintf("shard index %d has already joined (from %s); accepted: a distinct index per shard", req.Index, from)}
	}
	if c.sha == "" {
		c.sha, c.shaFrom = req.ScenarioSHA, req.Index
	}
	c.joined[req.Index] = remote
	c.at[req.Index] = joinStage
	return 0, nil
}

func (c *Coordinator) handleBarrier(w http.ResponseWriter, r *http.Request) {
	var req barrierRequest
	if !decode(w, r, &req) {
		return
	}
	b, e := c.arrive(req)
	if e != nil {
		refuse(w, http.StatusConflict, e)
		return
	}
	select {
	case <-b.done:
	case <-r.Context().Done(): // the shard gave up; its arrival stands
		return
	}
	if b.err != nil {
		refuse(w, http.StatusGatewayTimeout, b.err)
		return
	}
	reply(w, barrierReply{StartNs: b.startNs, Lost: b.lost})
}

// arrive counts one shard at a stage's barrier and opens it when the last arrives.
func (c *Coordinator) arrive(req barrierRequest) (*barrier, *errorReply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.joined[req.Index]; !ok {
		return nil, &errorReply{Error: fmt.Sprintf("shard %d reached stage %d without joining", req.Index, req.Stage)}
	}
	if l, ok := c.lost[req.Index]; ok {
		return nil, &errorReply{Error: fmt.Sprintf("shard %d reached stage %d after the coordinator had given it up (%s); the others ran on without it", req.Index, req.Stage, l.why)}
	}
	b := c.barrierLocked(req.Stage)
	b.arrived[req.Index] = true
	c.at[req.Index] = req.Stage
	select {
	case <-b.done:
		return b, nil // opened (or failed) already: the same answer again
	default:
	}
	if gone := c.leftMissingLocked(b); len(gone) > 0 {
		c.endLocked(&BarrierError{Stage: req.Stage, Missing: gone, Msg: fmt.Sprintf("%s: shard(s) %s finished and will not arrive", c.stageName(req.Stage), list(gone))})
		b.err.Missing = gone
		return b, nil
	}
	c.openIfReadyLocked(req.Stage, b)
	return b, nil
}

// barrierLocked finds or opens a stage's barrier; its deadline runs from now.
func (c *Coordinator) barrierLocked(stage int) *barrier {
	if b, ok := c.barriers[stage]; ok {
		return b
	}
	b := &barrier{arrived: map[int]bool{}, done: make(chan struct{})}
	b.timer = time.AfterFunc(c.opts.JoinTimeout, func() { c.expire(stage, b) })
	c.barriers[stage] = b
	if c.finished { // a request after a failure learns the failure at once
		b.err = &errorReply{Error: fmt.Sprint(c.err)}
		close(b.done)
	}
	return b
}

// expire fails the run when a barrier's deadline passes with shards missing, naming them.
func (c *Coordinator) expire(stage int, b *barrier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-b.done:
		return
	default:
	}
	var missing []int
	for i := range c.opts.Shards {
		if _, lost := c.lost[i]; !b.arrived[i] && !lost {
			missing = append(missing, i)
		}
	}
	if stage != joinStage && len(c.leftMissingLocked(b)) == 0 {
		// The run has started: the shards that arrived run on, and the missing ones are lost (their
		// results up to here stand, partial).
		for _, i := range missing {
			c.loseLocked(i, fmt.Sprintf("it did not reach stage %d's barrier within %s", stage, c.opts.JoinTimeout))
		}
		return
	}
	verb := "reach " + c.stageName(stage)
	if stage == joinStage {
		verb = "join"
	}
	err := &BarrierError{Stage: stage, Missing: missing, Msg: fmt.Sprintf("shard(s) %s of %d did not %s within %s", list(missing), c.opts.Shards, verb, c.opts.JoinTimeout)}
	c.log.Error("barrier expired", "stage", stage, "missing", missing)
	b.err = &errorReply{Error: err.Msg, Missing: missing}
	close(b.done)
	c.endLocked(err)
}

func (c *Coordinator) leftMissingLocked(b *barrier) []int {
	var gone []int
	for i := range c.left {
		if !b.arrived[i] {
			gone = append(gone, i)
		}
	}
	sort.Ints(gone)
	return gone
}

func (c *Coordinator) stageName(stage int) string {
	if stage == joinStage {
		return "the join"
	}
	return fmt.Sprintf("stage %d's barrier", stage)
}

func (c *Coordinator) handleLeave(w http.ResponseWriter, r *http.Request) {
	var req leaveRequest
	if !decode(w, r, &req) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.joined[req.Index]; !ok {
		refuse(w, http.StatusConflict, &errorReply{Error: fmt.Sprintf("shard %d left without joining", req.Index)})
		return
	}
	first := len(c.left) == 0
	reply(w, struct{}{})
	if _, lost := c.lost[req.Index]; lost {
		c.log.Info("a lost shard finished", "index", req.Index)
		return // it stays lost: the others ran on without it
	}
	c.left[req.Index] = true
	c.log.Info("shard finished", "index", req.Index)
	if c.endIfAllDoneLocked() {
		return
	}
	if first { // the rest run the same stages: they finish within the bound or are lost
		t := time.AfterFunc(c.opts.JoinTimeout, func() { c.unfinished() })
		go func() { <-c.stop; t.Stop() }()
	}
}

func (c *Coordinator) unfinished() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []int
	for i := range c.opts.Shards {
		if _, lost := c.lost[i]; !c.left[i] && !lost {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 && !c.finished {
		err := &BarrierError{Stage: joinStage, Missing: missing, Msg: fmt.Sprintf("shard(s) %s of %d did not finish within %s of the first that did", list(missing), c.opts.Shards, c.opts.JoinTimeout)}
		c.log.Error("shards unfinished", "missing", missing)
		c.endLocked(err)
	}
}

// BarrierError is a wait that ran past its bound; Missing names the shard indexes it waited for.
type BarrierError struct {
	Stage   int // -1: the join
	Missing []int
	Msg     string
}

func (e *BarrierError) Error() string { return e.Msg }

func list(ix []int) string {
	s := make([]string, len(ix))
	for i, v := range ix {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}
