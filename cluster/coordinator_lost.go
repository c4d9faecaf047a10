package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// A lost shard is one whose process the coordinator no longer hears from during the run: its attach
// connection dropped (the process died: killed, OOM, its node gone) or it missed a stage's barrier
// by the join timeout. The others must not wait for it — their results are whole — so its barriers
// open without it and the run ends, once the rest have finished, with a *LostError naming it.

// lostShard is why and where the coordinator gave a shard up.
type lostShard struct {
	stage int // the last barrier it had reached (joinStage: none): it was lost during that stage
	why   string
}

// LostError is a run that finished without some of its shards: the others ran every stage, and
// merging their results needs --allow-partial.
type LostError struct {
	// Lost maps each lost shard's index to the stage it was lost during (-1: before the first).
	Lost map[int]int
	Msg  string
}

func (e *LostError) Error() string { return e.Msg }

// Indexes are the lost shards, in order.
func (e *LostError) Indexes() []int {
	ix := make([]int, 0, len(e.Lost))
	for i := range e.Lost {
		ix = append(ix, i)
	}
	sort.Ints(ix)
	return ix
}

// handleAttach holds a shard's connection open until the coordinator ends; a connection that drops
// before the shard has left loses the shard.
func (c *Coordinator) handleAttach(w http.ResponseWriter, r *http.Request) {
	var req leaveRequest
	// The whole body is read, so the server watches the connection and cancels r's context when the
	// peer closes it.
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		refuse(w, http.StatusBadRequest, &errorReply{Error: fmt.Sprintf("%s: the body is not the JSON the coordinator reads: %v", r.URL.Path, err)})
		return
	}
	c.mu.Lock()
	_, joined := c.joined[req.Index]
	c.mu.Unlock()
	if !joined {
		refuse(w, http.StatusConflict, &errorReply{Error: fmt.Sprintf("shard %d attached without joining", req.Index)})
		return
	}
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-c.stop:
	case <-r.Context().Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.left[req.Index] {
			c.loseLocked(req.Index, "its connection to the coordinator dropped (the process ended without finishing)")
		}
	}
}

// loseLocked gives shard i up: the barriers waiting only for lost shards open, and the run ends when
// every other shard has finished.
func (c *Coordinator) loseLocked(i int, why string) {
	if _, lost := c.lost[i]; lost || c.finished || c.left[i] {
		return
	}
	stage := c.at[i]
	c.lost[i] = lostShard{stage: stage, why: why}
	c.log.Error("shard lost: the others run on without it", "index", i, "stage", stage, "why", why)
	for st, b := range c.barriers {
		c.openIfReadyLocked(st, b)
	}
	c.endIfAllDoneLocked()
}

// openIfReadyLocked opens b when every shard not lost has arrived.
func (c *Coordinator) openIfReadyLocked(stage int, b *barrier) {
	select {
	case <-b.done:
		return
	default:
	}
	if len(b.arrived) == 0 {
		return
	}
	for i := range c.opts.Shards {
		if _, lost := c.lost[i]; !b.arrived[i] && !lost {
			return
		}
	}
	b.timer.Stop()
	b.startNs = c.opts.Clock() + int64(c.opts.Margin)
	b.lost = c.lostIndexesLocked()
	close(b.done)
	c.log.Info("barrier open", "stage", stage, "start_ns", b.startNs, "without", b.lost)
}

func (c *Coordinator) lostIndexesLocked() []int {
	var ix []int
	for i := range c.lost {
		ix = append(ix, i)
	}
	sort.Ints(ix)
	return ix
}

// endIfAllDoneLocked ends the run once every shard has finished or been lost: nil when none was lost,
// else a *LostError naming them.
func (c *Coordinator) endIfAllDoneLocked() bool {
	if len(c.left)+len(c.lost) < c.opts.Shards {
		return false
	}
	if len(c.lost) == 0 {
		c.endLocked(nil)
		return true
	}
	e := &LostError{Lost: map[int]int{}}
	var parts []string
	for _, i := range c.lostIndexesLocked() {
		l := c.lost[i]
		e.Lost[i] = l.stage
		where := fmt.Sprintf("during stage %d", l.stage)
		if l.stage == joinStage {
			where = "before the first stage"
		}
		parts = append(parts, fmt.Sprintf("shard %d lost %s: %s", i, where, l.why))
	}
	e.Msg = fmt.Sprintf("%d of %d shard(s) lost (%s); the other %d ran every stage: merge their results with --allow-partial, which names the lost shard(s)",
		len(c.lost), c.opts.Shards, strings.Join(parts, "; "), c.opts.Shards-len(c.lost))
	c.endLocked(e)
	return true
}
