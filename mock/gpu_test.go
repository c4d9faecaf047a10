package mock

import (
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// dcgmScrape is one GET /dcgm/metrics, parsed as a Prometheus server would, with the moments the
// request left and the answer came back: the mock read its GPUs between the two.
type dcgmScrape struct {
	families     map[string]*dto.MetricFamily
	sent, answer time.Time
}

func scrapeDCGM(t *testing.T, m *Running) dcgmScrape {
	t.Helper()
	sent := time.Now()
	resp, err := http.Get("http://" + m.Addr() + "/dcgm/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/dcgm/metrics: HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/dcgm/metrics is not Prometheus text: %v", err)
	}
	return dcgmScrape{families: families, sent: sent, answer: time.Now()}
}

// perGPU is a field's value on each GPU, by its gpu label.
func (s dcgmScrape) perGPU(t *testing.T, name string) map[string]float64 {
	t.Helper()
	f := s.families[name]
	if f == nil {
		t.Fatalf("/dcgm/metrics lacks %s", name)
	}
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		v := m.GetGauge().GetValue()
		if f.GetType() == dto.MetricType_COUNTER {
			v = m.GetCounter().GetValue()
		}
		out[labelOf(m, "gpu")] = v
	}
	return out
}

// value is a field's value on GPU 0.
func (s dcgmScrape) value(t *testing.T, name string) float64 {
	t.Helper()
	return s.perGPU(t, name)["0"]
}

// energyJ is DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION over all GPUs, in joules.
func (s dcgmScrape) energyJ(t *testing.T) float64 {
	t.Helper()
	total := 0.0
	for _, mJ := range s.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") {
		total += mJ / 1000
	}
	return total
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func get(t *testing.T, m *Running, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// drain sends a request and reads its whole answer, streamed or not.
func drain(t *testing.T, m *Running, path, body string, header map[string]string) {
	t.Helper()
	if status, raw := postWith(t, m, path, []byte(body), header); status != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", path, status, raw)
	}
}

// The energy counter between two scrapes is the model's, from the test's own arithmetic: idle × GPUs ×
// the time between the readings + J/token × the tokens the requests asked for (EOSMinFraction 1: each
// generates max_tokens), split evenly over the GPUs; streamed and whole answers, on every endpoint.
func TestDCGMEnergyFollowsTheModel(t *testing.T) {
	const gpus, idle, jPerToken = 2, 80.0, 0.25
	m := start(t, func(c *Config) { c.GPUs, c.GPUIdleWatts, c.GPUJoulesPerToken = gpus, idle, jPerToken })
	before := scrapeDCGM(t, m)
	tokensBefore, modelBefore := m.GeneratedTokens(), m.GPUEnergyJoules()
	servedBefore := metricValue(t, m, "vllm:generation_tokens_total")

	anthropic := map[string]string{"anthropic-version": "2023-06-01"}
	drain(t, m, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":40,"stream":true}`, nil)
	drain(t, m, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":30}`, nil)
	drain(t, m, "/completions", `{"model":"m","prompt":"Once","max_tokens":20,"stream":true}`, nil)
	drain(t, m, "/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":25,"stream":true}`, anthropic)
	drain(t, m, "/responses", `{"model":"m","input":"hi","max_output_tokens":15}`, nil)
	const tokens = 40 + 30 + 20 + 25 + 15
	time.Sleep(200 * time.Millisecond)
	after := scrapeDCGM(t, m)

	if got := m.GeneratedTokens() - tokensBefore; got != tokens {
		t.Fatalf("GeneratedTokens grew by %d, want %d", got, tokens)
	}
	if got := metricValue(t, m, "vllm:generation_tokens_total") - servedBefore; got != tokens {
		t.Fatalf("vllm:generation_tokens_total grew by %g, want %d: it and the GPU model must count the same tokens", got, tokens)
	}
	// The mock read its GPUs somewhere within each scrape's round trip: the time between the two
	// readings lies between these bounds, and so does the energy, give or take 1 %.
	shortest, longest := after.sent.Sub(before.answer).Seconds(), after.answer.Sub(before.sent).Seconds()
	lo, hi := gpus*idle*shortest+jPerToken*tokens, gpus*idle*longest+jPerToken*tokens
	if got := after.energyJ(t) - before.energyJ(t); got < 0.99*lo || got > 1.01*hi {
		t.Fatalf("energy between scrapes %.3f J, want %.3f to %.3f J (idle %g W × %d GPUs × %.3f–%.3f s + %g J × %d tokens)",
			got, lo, hi, idle, gpus, shortest, longest, jPerToken, tokens)
	}
	if got := m.GPUEnergyJoules() - modelBefore; got < jPerToken*tokens || got > jPerToken*tokens+gpus*idle*time.Since(before.sent).Seconds() {
		t.Fatalf("GPUEnergyJoules grew by %.3f J: want the tokens' %.3f J and idle power's over the time since", got, jPerToken*tokens)
	}
	energy := after.perGPU(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	power := after.perGPU(t, "DCGM_FI_DEV_POWER_USAGE")
	if len(energy) != gpus || math.Abs(energy["0"]-energy["1"]) > 1e-9*energy["0"] || power["0"] != power["1"] {
		t.Fatalf("the two GPUs should share the load evenly: energy %v mJ, power %v W", energy, power)
	}
}

// The power gauge is idle + J/token × the tokens of the last second, shared over the GPUs: a stream
// of a known rate reads as that rate, and a second after its end the GPUs are back to idle.
func TestDCGMPowerFollowsTheTokenRate(t *testing.T) {
	const gpus, idle, jPerToken, tps = 2, 80.0, 0.5, 200
	m := start(t, func(c *Config) {
		c.TTFT, c.TPS, c.MaxConcurrency = time.Millisecond, tps, 2
		c.GPUs, c.GPUIdleWatts, c.GPUJoulesPerToken = gpus, idle, jPerToken
	})
	resting := scrapeDCGM(t, m)
	if p := resting.value(t, "DCGM_FI_DEV_POWER_USAGE"); p != idle {
		t.Fatalf("power at rest %g W, want the idle %g W", p, idle)
	}
	if u, c := resting.value(t, "DCGM_FI_DEV_GPU_UTIL"), resting.value(t, "DCGM_FI_DEV_SM_CLOCK"); u != 0 || c != gpuIdleClockMHz {
		t.Fatalf("at rest: utilization %g %%, SM clock %g MHz; want 0 and %d", u, c, gpuIdleClockMHz)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(m.BaseURL()+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":400,"stream":true}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	waitFor(t, "the stream to run for over a second", func() bool { return m.GeneratedTokens() >= 1.2*tps })
	busy := scrapeDCGM(t, m)
	<-done
	// One 2-slot batch half full; the stream sends tps tokens a second, scheduled from absolute times,
	// and each GPU draws half the tokens' power.
	want := idle + jPerToken*tps/gpus
	for gpu, p := range busy.perGPU(t, "DCGM_FI_DEV_POWER_USAGE") {
		if math.Abs(p-want) > 0.1*jPerToken*tps/gpus {
			t.Fatalf("GPU %s's power while streaming %g W, want %g W (idle %g + %g J × %d tok/s ÷ %d GPUs)", gpu, p, want, idle, jPerToken, tps, gpus)
		}
	}
	if u, a, c := busy.value(t, "DCGM_FI_DEV_GPU_UTIL"), busy.value(t, "DCGM_FI_PROF_SM_ACTIVE"), busy.value(t, "DCGM_FI_DEV_SM_CLOCK"); u != 50 || a != 0.5 || c != gpuBusyClockMHz {
		t.Fatalf("one request in two slots: utilization %g %%, SM active %g, clock %g MHz; want 50, 0.5, %d", u, a, c, gpuBusyClockMHz)
	}
	time.Sleep(1100 * time.Millisecond)
	if p := scrapeDCGM(t, m).value(t, "DCGM_FI_DEV_POWER_USAGE"); p != idle {
		t.Fatalf("power a second after the stream %g W, want the idle %g W", p, idle)
	}
}

var uuidForm = regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Every series carries dcgm-exporter's labels; the UUIDs are the seed's; the framebuffer fills as the
// prefix cache does; and /metrics stays vLLM's alone.
func TestDCGMLabelsMemoryAndSeparateRegistry(t *testing.T) {
	m := start(t, func(c *Config) { c.GPUs, c.Seed, c.CacheCapacity = 2, 7, 4096 })
	first := scrapeDCGM(t, m)
	for _, name := range []string{"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_UTIL",
		"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK"} {
		f := first.families[name]
		if f == nil || len(f.GetMetric()) != 2 {
			t.Fatalf("%s: want one series per GPU (2), got %v", name, f)
		}
		for i, s := range f.GetMetric() {
			gpu := labelOf(s, "gpu")
			if want := map[string]string{"0": "nvidia0", "1": "nvidia1"}[gpu]; want == "" || labelOf(s, "device") != want ||
				!uuidForm.MatchString(labelOf(s, "UUID")) || labelOf(s, "modelName") != "plload mock GPU" || labelOf(s, "Hostname") == "" {
				t.Fatalf("%s series %d: labels %v", name, i, s.GetLabel())
			}
		}
	}
	uuids := func(s dcgmScrape) []string {
		var out []string
		for _, s := range s.families["DCGM_FI_DEV_POWER_USAGE"].GetMetric() {
			out = append(out, labelOf(s, "UUID"))
		}
		return out
	}
	same := scrapeDCGM(t, start(t, func(c *Config) { c.GPUs, c.Seed = 2, 7 }))
	other := scrapeDCGM(t, start(t, func(c *Config) { c.GPUs, c.Seed = 2, 8 }))
	if u := uuids(first); u[0] == u[1] || strings.Join(u, ",") != strings.Join(uuids(same), ",") || u[0] == uuids(other)[0] {
		t.Fatalf("UUIDs: seed 7 %v, again %v, seed 8 %v: want distinct devices, the same for the same seed", u, uuids(same), uuids(other))
	}

	used, free := first.value(t, "DCGM_FI_DEV_FB_USED"), first.value(t, "DCGM_FI_DEV_FB_FREE")
	if used != gpuFBBaseMiB || used+free != gpuFBTotalMiB {
		t.Fatalf("framebuffer with an empty cache: used %g + free %g MiB, want %d + the rest of %d", used, free, gpuFBBaseMiB, gpuFBTotalMiB)
	}
	drain(t, m, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("tell me more about the sea ", 200)+`"}],"max_tokens":1}`, nil)
	filled := scrapeDCGM(t, m)
	if u, f := filled.value(t, "DCGM_FI_DEV_FB_USED"), filled.value(t, "DCGM_FI_DEV_FB_FREE"); u <= used || u+f != gpuFBTotalMiB {
		t.Fatalf("framebuffer after a long prompt: used %g (was %g) + free %g MiB: want more used, %d in all", u, used, f, gpuFBTotalMiB)
	}

	if code, body := get(t, m, "/metrics"); code != 200 || strings.Contains(body, "DCGM_") || !strings.Contains(body, "vllm:generation_tokens_total") {
		t.Fatalf("/metrics must stay vLLM-shaped, without DCGM fields: HTTP %d\n%s", code, body)
	}
	if _, body := get(t, m, "/dcgm/metrics"); strings.Contains(body, "vllm:") {
		t.Fatalf("/dcgm/metrics carries vLLM's metrics:\n%s", body)
	}
}

// The exporter's faults: down answers 503 until cleared; NaN spoils the power and nothing else; a
// reset restarts the energy counter from 0 and it counts on, while the model's own total does not.
func TestGPUFaults(t *testing.T) {
	const idle = 100.0
	m := start(t, func(c *Config) { c.GPUIdleWatts = idle })

	m.SetGPUFault(GPUFaultDown)
	if code, _ := get(t, m, "/dcgm/metrics"); code != http.StatusServiceUnavailable {
		t.Fatalf("exporter down: HTTP %d, want 503", code)
	}
	if code, _ := get(t, m, "/metrics"); code != http.StatusOK {
		t.Fatalf("exporter down took /metrics with it: HTTP %d", code)
	}

	m.SetGPUFault(GPUFaultNaN)
	nan := scrapeDCGM(t, m)
	if p, e := nan.value(t, "DCGM_FI_DEV_POWER_USAGE"), nan.value(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"); !math.IsNaN(p) || math.IsNaN(e) || e <= 0 {
		t.Fatalf("NaN fault: power %g W, energy %g mJ; want NaN and a number", p, e)
	}

	m.SetGPUFault(GPUFaultNone)
	time.Sleep(50 * time.Millisecond)
	before := scrapeDCGM(t, m)
	if p := before.value(t, "DCGM_FI_DEV_POWER_USAGE"); p != idle {
		t.Fatalf("after the faults clear: power %g W, want %g", p, idle)
	}
	modelBefore := m.GPUEnergyJoules()
	resetAt := time.Now()
	m.ResetGPUEnergy()
	after := scrapeDCGM(t, m)
	sinceReset := after.answer.Sub(resetAt).Seconds()
	if e := after.energyJ(t); e < 0 || e > idle*sinceReset || e >= before.energyJ(t) {
		t.Fatalf("after a reset the counter reads %g J (was %g J): want it from 0, at most %g J", e, before.energyJ(t), idle*sinceReset)
	}
	time.Sleep(20 * time.Millisecond)
	if later := scrapeDCGM(t, m); later.energyJ(t) <= after.energyJ(t) {
		t.Fatalf("after a reset the counter should count on: %g then %g J", after.energyJ(t), later.energyJ(t))
	}
	if m.GPUEnergyJoules() < modelBefore {
		t.Fatalf("GPUEnergyJoules went back on a reset: %g then %g J", modelBefore, m.GPUEnergyJoules())
	}
}

func TestGPUConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		flag   string
	}{
		{func(c *Config) { c.GPUs = 0 }, "--gpus 0"},
		{func(c *Config) { c.GPUs = maxGPUs + 1 }, "--gpus"},
		{func(c *Config) { c.GPUIdleWatts = -1 }, "--gpu-idle-watts -1"},
		{func(c *Config) { c.GPUIdleWatts = math.NaN() }, "--gpu-idle-watts NaN"},
		{func(c *Config) { c.GPUIdleWatts = math.Inf(1) }, "--gpu-idle-watts +Inf"},
		{func(c *Config) { c.GPUJoulesPerToken = -0.1 }, "--gpu-joules-per-token -0.1"},
		{func(c *Config) { c.GPUJoulesPerToken = math.NaN() }, "--gpu-joules-per-token NaN"},
	} {
		cfg := DefaultConfig()
		tc.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.flag) || !strings.Contains(err.Error(), "accepted") {
			t.Errorf("want an error naming %s and what is accepted, got %v", tc.flag, err)
		}
	}
	cfg := DefaultConfig()
	cfg.GPUIdleWatts, cfg.GPUJoulesPerToken = 0, 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("zero idle power and energy per token are a valid (if odd) model: %v", err)
	}
}
