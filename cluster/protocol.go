package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/plload/plload/workload"
)

// The coordinator's wire protocol: JSON over plain HTTP, every request carrying the shared secret (when
// the coordinator has one) in TokenHeader. Timestamps on the wire are wall-clock Unix nanoseconds of the
// sender's clock; each side measures intervals with its monotonic clock.
const (
	// TokenHeader carries the shared secret ("Bearer <token>", as Authorization does).
	TokenHeader = "Authorization"
	pathJoin    = "/v1/join"    // POST joinRequest → 200 {} or an errorReply
	pathClock   = "/v1/clock"   // POST (no body) → clockReply: one NTP-style round
	pathBarrier = "/v1/barrier" // POST barrierRequest → barrierReply once every shard arrived, or an errorReply
	pathLeave   = "/v1/leave"   // POST leaveRequest → 200 {}
	// pathAttach is held open by every shard from its join to its leave: the coordinator learns at
	// once that a shard's process died (its connection drops) instead of at the next barrier's bound.
	pathAttach = "/v1/attach" // POST leaveRequest → 200, then a body that ends when the coordinator does
)

// DefaultJoinTimeout is --join-timeout's default on both sides.
const DefaultJoinTimeout = 60 * time.Second

// joinStage is the barrier every shard meets at Join: all N have joined.
const joinStage = -1

type joinRequest struct {
	Index       int    `json:"index"`
	Count       int    `json:"count"`
	ScenarioSHA string `json:"scenario_sha256"`
}

type clockReply struct {
	NowNs int64 `json:"now_ns"`
}

type barrierRequest struct {
	Index int `json:"index"`
	Stage int `json:"stage"`
}

type barrierReply struct {
	// StartNs is the stage's start instant on the coordinator's clock.
	StartNs int64 `json:"start_ns"`
	// Lost names the shards the coordinator has given up (their connection dropped, or they missed a
	// barrier): the stage runs without them.
	Lost []int `json:"lost,omitempty"`
}

type leaveRequest struct {
	Index int `json:"index"`
}

// errorReply is every refusal's body; Missing names the shard indexes a failed barrier waited for.
type errorReply struct {
	Error   string `json:"error"`
	Missing []int  `json:"missing,omitempty"`
}

// ScenarioSHA is "the same scenario" across shards (docs/deployment.md): the sha256, in hex, of the resolved
// scenario without output.* (each shard writes its own results directory). The shard flags are not
// part of the scenario, so they are not part of the sum either.
func ScenarioSHA(sc *workload.Scenario) (string, error) {
	c := *sc // a shallow copy: only the Output field is replaced
	c.Output = workload.Output{}
	b, err := c.ResolvedYAML()
	if err != nil {
		return "", fmt.Errorf("scenario sha256: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// IsLoopback reports whether a listen address ("host:port") binds loopback only. An empty host
// (":7070"), 0.0.0.0 and :: bind every interface; a host name other than localhost may resolve to
// anything, so it counts as beyond loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TokenFromEnv reads the shared secret from the variable --token-env names ("" names none: no
// token). A named variable that is unset or empty is an error, so a typo never runs without one.
func TokenFromEnv(name string, getenv func(string) string) (string, error) {
	if name == "" {
		return "", nil
	}
	tok := getenv(name)
	if tok == "" {
		return "", fmt.Errorf("--token-env %s: the variable is unset or empty; accepted: the name of a variable holding the coordinator's shared secret", name)
	}
	return tok, nil
}
