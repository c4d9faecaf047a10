package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sort"
	"time"

	"github.com/plload/plload/metrics"
)

// rttProbes is how many timed GET /v1/models measure the network round trip before a stage.
const rttProbes = 20

// rttTimeout bounds each probe (or target.timeout, when shorter): a server that takes the
// connection and never answers GET /models must not hold the stage's start forever.
const rttTimeout = 10 * time.Second

// measureRTT times rttProbes requests for {base}/models on one warm keep-alive connection: the part
// of every TTFT that no server can remove. Absent (N = 0), with the reason, when the target does not
// answer.
func (s *stageRun) measureRTT(ctx context.Context) (metrics.Dist, error) {
	url := s.target.at("/models")
	shown := s.scrub(url) // a key in the base URL's query stays out of messages
	var failure error
	limit := min(rttTimeout, s.timeout)
	get := func() (time.Duration, bool) {
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		// The stage's first requests reuse the probe's warm connection: the tally must know it.
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: s.conns.probed})
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			failure = err
			return 0, false
		}
		for k, v := range s.headers {
			req.Header[k] = v
		}
		start := time.Now()
		resp, err := s.client.Do(req)
		if err != nil && ctx.Err() == context.DeadlineExceeded {
			failure = fmt.Errorf("GET %s: no answer within %v", shown, limit)
			return 0, false
		}
		if err != nil {
			failure = fmt.Errorf("GET %s: %s", shown, s.scrub(rootCause(err).Error()))
			return 0, false
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return time.Since(start), true
	}
	if _, ok := get(); !ok { // warm the connection (and give up on a target that does not answer)
		return metrics.Dist{}, failure
	}
	var ms []float64
	for range rttProbes {
		d, ok := get()
		if !ok {
			break
		}
		ms = append(ms, metrics.Ms(int64(d)))
	}
	sort.Float64s(ms)
	return metrics.SummarizeSorted(ms), nil
}
