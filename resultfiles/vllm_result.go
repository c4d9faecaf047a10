package resultfiles

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// VLLMResult is the file `vllm bench serve --save-result` writes, one per stage directory, so the
// scripts that read vLLM's results read plload's.
const VLLMResult = "vllm_bench_result.json"

// VLLMPercentiles are the percentiles written for each latency, as `--metric-percentiles 50,90,95,99`.
var VLLMPercentiles = []string{"50", "90", "95", "99"}

// vllmHead is every key of the result but the per-request arrays, in vLLM's order. Every number is
// stage.json's: the window's duration and throughput; ttft = TTFT, tpot = TPOT (excluding the first
// token, per request), itl = the pooled gaps between chunks, e2el = request latency. completed is
// the successful requests that ended in the window (so request_throughput = completed ÷ duration
// holds, as in vLLM); failed is the errors and cancellations that started in it.
func (r *StageReport) vllmHead() ordered {
	s := r.Summary
	t := s.Throughput
	o := ordered{
		{"date", time.Unix(0, s.Window.EEffNs).UTC().Format("20060102-150405")},
		{"backend", vllmBackend(r.Target.Endpoint)},
		{"model_id", r.Target.Model},
		{"tokenizer_id", r.Target.Model},
		{"num_prompts", s.Requests.InWindow},
		{"request_rate", r.vllmRate()},
		{"burstiness", r.vllmBurstiness()},
		{"max_concurrency", r.vllmMaxConcurrency()},
		{"duration", s.Window.Seconds},
		{"completed", t.Requests},
		{"failed", s.Requests.Errors + s.Requests.Cancelled},
		{"total_input_tokens", t.InputTokens},
		{"total_output_tokens", t.OutputTokens},
		{"request_throughput", t.ReqPerSec},
		{"request_goodput", s.Goodput.ReqPerSec}, // null without an SLO latency limit, as vLLM without --goodput
		{"output_throughput", t.OutTokPerSec},
		{"total_token_throughput", t.TotalTokPerSec},
	}
	chunks := s.ITL // vLLM's itl is the gaps between chunks, as its per-request itls
	if s.InterChunk != nil {
		chunks = *s.InterChunk
	}
	for _, m := range []struct {
		name string
		d    metrics.Dist
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"itl", chunks}, {"e2el", s.E2E}} {
		o = append(o, kv{"mean_" + m.name + "_ms", stat(m.d, "mean")}, kv{"median_" + m.name + "_ms", stat(m.d, "p50")},
			kv{"std_" + m.name + "_ms", stat(m.d, "std")})
		for _, p := range VLLMPercentiles {
			o = append(o, kv{"p" + p + "_" + m.name + "_ms", stat(m.d, "p"+p)})
		}
	}
	return o
}

// stat is a distribution's statistic, nil (null) when it has no values: vLLM would write 0, which
// reads as a measurement.
func stat(d metrics.Dist, name string) any {
	if v, ok := d.Stat(name); ok {
		return v
	}
	return nil
}

// vllmBackend is vLLM's name for the endpoint plload sent to.
func vllmBackend(endpoint string) string {
	switch endpoint {
	case "completions":
		return "openai"
	case "chat", "":
		return "openai-chat"
	case "embeddings":
		return "openai-embeddings"
	case "rerank":
		return "vllm-rerank"
	}
	// vLLM's bench has no backend for the Messages and Responses APIs: named as plload's own, never
	// as chat, which they are not.
	return "plload-" + endpoint
}

// vllmRate is request_rate as vLLM writes it: requests/s, or "inf" when requests go out as fast as
// the concurrency allows (closed loop, replay).
func (r *StageReport) vllmRate() any {
	switch {
	case r.Rate != nil:
		return r.Rate.To // a ramp's rate once it has ramped
	case r.Mode == workload.ModeArrivalRate && r.SessionsPerSec > 0:
		return r.SessionsPerSec
	}
	return "inf"
}

// vllmBurstiness is vLLM's gamma shape, 1/cv²: 1 for Poisson arrivals (and closed loop, vLLM's
// default), "inf" for a constant rate (cv 0).
func (r *StageReport) vllmBurstiness() any {
	switch {
	case r.Arrival == workload.ArrivalGamma && r.CV > 0:
		return 1 / (r.CV * r.CV)
	case r.Arrival == workload.ArrivalConstant:
		return "inf"
	}
	return 1.0
}

// vllmMaxConcurrency is the cap on requests in flight; nil (null) when unbounded.
func (r *StageReport) vllmMaxConcurrency() any {
	for _, c := range []int{r.Concurrency, r.MaxConcurrency, r.MaxInFlight} {
		if c > 0 {
			return c
		}
	}
	return nil
}

// writeVLLMResult writes vllm_bench_result.json into dir (atomically, mode 0644 as every result
// file). The per-request arrays come from the stage's records (profile_export.jsonl in dir), those
// that started in the window, in file order; without the records they are [] and the plload key says
// so. itls is streamed to the file, not held: a long stage has hundreds of millions of gaps.
func (r *StageReport) writeVLLMResult(dir string) error {
	return metrics.WriteFileAtomicFrom(filepath.Join(dir, VLLMResult), func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 256<<10)
		head, err := json.Marshal(r.vllmHead())
		if err != nil {
			return err
		}
		w.Write(head[:len(head)-1]) // the object stays open for the arrays
		w.WriteString(`,"itls":[`)
		arrays, source, err := r.vllmRequests(filepath.Join(dir, "profile_export.jsonl"), w)
		if err != nil {
			return err
		}
		w.WriteString("]")
		tail := ordered{{"input_lens", arrays.inputLens}, {"output_lens", arrays.outputLens}, {"ttfts", arrays.ttfts},
			{"errors", arrays.errors}, {"plload", ordered{{"version", r.Tool}, {"run", r.Run}, {"stage", r.Stage},
				{"window", ordered{{"start", isoTime(r.Summary.Window.WNs)}, {"end", isoTime(r.Summary.Window.EEffNs)},
					{"seconds", r.Summary.Window.Seconds}, {"requests", "started in the window"}}},
				{"per_request", source}}}}
		rest, err := json.Marshal(tail)
		if err != nil {
			return err
		}
		w.WriteString(",")
		w.Write(append(rest[1:], '\n'))
		return w.Flush()
	})
}

// vllmArrays are the per-request arrays but itls, one entry per request that started in the window.
type vllmArrays struct {
	inputLens, outputLens []int
	ttfts                 []float64 // seconds; 0 for a failed request, as vLLM
	errors                []string  // "" for a success
}

// vllmRequests reads the records that started in the window, writes each one's chunk gaps (seconds)
// to itls as a JSON list, and returns the other arrays and where they came from.
func (r *StageReport) vllmRequests(records string, itls io.Writer) (vllmArrays, string, error) {
	a := vllmArrays{inputLens: []int{}, outputLens: []int{}, ttfts: []float64{}, errors: []string{}}
	f, err := os.Open(records)
	if errors.Is(err, fs.ErrNotExist) {
		return a, "none: the stage's records are not kept (output.record_requests: false)", nil
	}
	if err != nil {
		return a, "", err
	}
	defer f.Close()
	win := r.Summary.Window
	n := 0
	err = metrics.ReadRecords(f, func(rec *metrics.Record) error {
		if rec.RequestStartNs < win.WNs || rec.RequestStartNs >= win.EEffNs {
			return nil
		}
		if n > 0 {
			io.WriteString(itls, ",")
		}
		n++
		writeGaps(itls, rec)
		isl := rec.InputSequenceLength.V
		if !rec.InputSequenceLength.OK {
			isl = rec.ErrorISL.V
		}
		a.inputLens = append(a.inputLens, isl)
		if !rec.OK() {
			a.outputLens, a.ttfts, a.errors = append(a.outputLens, 0), append(a.ttfts, 0), append(a.errors, errorText(rec))
			return nil
		}
		a.outputLens = append(a.outputLens, rec.OutputSequenceLength.V)
		a.ttfts = append(a.ttfts, rec.TTFT.V/1000)
		a.errors = append(a.errors, "")
		return nil
	})
	if err != nil {
		return a, "", fmt.Errorf("%s: %w", records, err)
	}
	if !r.RecordsKept { // the run removes the file after this: do not name it as if it were there
		return a, "profile_export.jsonl, read before it was removed (output.record_requests: false)", nil
	}
	return a, "profile_export.jsonl", nil
}

// writeGaps writes a request's chunk gaps in seconds as a JSON list ([] for a failed request).
func writeGaps(w io.Writer, rec *metrics.Record) {
	buf := []byte{'['}
	if rec.OK() {
		for i, g := range rec.InterChunkLatency {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendFloat(buf, g/1000, 'g', -1, 64)
		}
	}
	w.Write(append(buf, ']'))
}

// errorText is a failed request's error as one string: "429 Too Many Requests: slow down".
func errorText(rec *metrics.Record) string {
	if rec.Error == nil {
		return "RequestCancellationError" // cancelled without an error object
	}
	s := rec.Error.Type
	if rec.Error.Code.OK {
		s = strconv.Itoa(rec.Error.Code.V) + " " + s
	}
	if rec.Error.Message != "" {
		s += ": " + rec.Error.Message
	}
	return s
}
