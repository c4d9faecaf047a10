package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// LoadOptions says what the caller is about to do with the scenario.
type LoadOptions struct {
	// ForRun turns an unset ${ENV} reference or api_key_env variable into an error: traffic without
	// its credentials would only measure 401s. `plload validate` reports them as warnings.
	ForRun bool
	// Getenv looks up environment variables; nil means os.Getenv.
	Getenv func(string) string
}

// Load reads, decodes, defaults and validates a scenario file. It returns every problem found; the
// scenario may be used only when issues.Err() is nil.
func Load(path string, opts LoadOptions) (*Scenario, Issues) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, Issues{{Severity: SeverityError, File: path, Message: fmt.Sprintf("cannot read the scenario file: %v", err)}}
	}
	return Parse(path, data, opts)
}

// Parse is Load for a scenario already in memory; path names it in messages and anchors relative paths.
func Parse(path string, data []byte, opts LoadOptions) (*Scenario, Issues) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	s := &Scenario{File: path}
	issues := parseScenarioYAML(path, data, s)
	if s.positions == nil {
		return nil, issues
	}
	bad := map[string]bool{}
	for _, is := range issues {
		bad[is.Path] = true
	}
	s.applyDefaults()
	c := &checker{s: s, bad: bad, file: path}
	c.rules()
	c.reportMissingSections()
	c.personaFile()
	c.env(opts)
	if len(c.issues.Errors()) == 0 && len(issues.Errors()) == 0 {
		c.estimates()
	}
	issues = append(issues, c.issues...)
	issues.sortByPosition()
	return s, issues
}

// checker applies the validation rules to a decoded scenario.
type checker struct {
	s      *Scenario
	file   string
	bad    map[string]bool // paths that already failed to decode: no second message for them
	issues Issues

	missingSections map[string][]string // top-level sections absent from the file → their required keys
	sectionOrder    []string
}

// at finds where path's value is in the file (see Scenario.at).
func (c *checker) at(path string) position { return c.s.at(path) }

func parent(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

func (c *checker) report(sev Severity, path, format string, args ...any) {
	if c.bad[path] {
		return
	}
	at := c.at(path)
	c.issues = append(c.issues, &Issue{Severity: sev, File: c.file, Line: at.line, Column: at.column,
		Path: path, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) errorf(path, format string, args ...any) {
	c.report(SeverityError, path, format, args...)
}

func (c *checker) warnf(path, format string, args ...any) {
	c.report(SeverityWarning, path, format, args...)
}

// require reports path as missing and returns false when the file does not set it. When its whole
// top-level section is missing, the keys are gathered into one error for the section.
func (c *checker) require(path, accepted string) bool {
	if c.s.has(path) || c.bad[path] {
		return c.s.has(path)
	}
	section, key, nested := strings.Cut(path, ".")
	_, keyWritten := c.s.keyPositions[section]
	if nested && !c.s.has(section) && !keyWritten && !c.bad[section] {
		if c.missingSections == nil {
			c.missingSections = map[string][]string{}
		}
		if _, seen := c.missingSections[section]; !seen {
			c.sectionOrder = append(c.sectionOrder, section)
		}
		c.missingSections[section] = append(c.missingSections[section], key)
		return false
	}
	c.errorf(path, "required but missing; accepted: %s", accepted)
	return false
}

// reportMissingSections turns the keys gathered by require into one error per missing section.
func (c *checker) reportMissingSections() {
	for _, section := range c.sectionOrder {
		c.errorf(section, "required but missing; accepted: a mapping with %s", strings.Join(c.missingSections[section], ", "))
	}
}

func (c *checker) oneOf(path, found string, accepted ...string) {
	for _, a := range accepted {
		if found == a {
			return
		}
	}
	msg := fmt.Sprintf("found %q; accepted: %s", found, strings.Join(accepted, ", "))
	if s := suggest(found, accepted); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	c.errorf(path, "%s", msg)
}

// mockSlots checks the mock's request slots and their scaling.
func (c *checker) mockSlots(m *MockTarget) {
	const p, most = "target.mock.", 1_000_000
	switch {
	case m.MaxConcurrency < 0:
		c.errorf(p+"max_concurrency", "found %d; accepted: 0 (unlimited) or the number of request slots, beyond which requests queue", m.MaxConcurrency)
	case m.ScaleMaxConcurrency < 0 || m.ScaleMaxConcurrency > most:
		c.errorf(p+"scale_max_concurrency", "found %d; accepted: the slots after scale_after, 1 to %d (or leave it out: the slots never change)", m.ScaleMaxConcurrency, most)
	case m.ScaleMaxConcurrency > 0 && m.MaxConcurrency == 0:
		c.errorf(p+"scale_max_concurrency", "found %d without target.mock.max_concurrency; accepted: with max_concurrency N, the slots before the scale", m.ScaleMaxConcurrency)
	case m.ScaleAfter < 0 || m.ScaleMaxConcurrency > 0 && m.ScaleAfter == 0:
		c.errorf(p+"scale_after", "found %s; accepted: a duration > 0 (such as 30s), counted from the mock's first request", m.ScaleAfter)
	case m.ScaleAfter > 0 && m.ScaleMaxConcurrency == 0:
		c.errorf(p+"scale_after", "found %s without target.mock.scale_max_concurrency; accepted: with scale_max_concurrency M, the slots after the scale", m.ScaleAfter)
	}
}

func (c *checker) positive(path string, d Duration) {
	if c.s.has(path) && d <= 0 {
		c.errorf(path, "found %s; accepted: a duration > 0", d)
	}
}

func (c *checker) fraction(path string, f float64) {
	if f < 0 || f > 1 {
		c.errorf(path, "found %g; accepted: a fraction from 0 to 1 (1%% is 0.01)", f)
	}
}

func (c *checker) dist(path string, d Dist) {
	for bad := range c.bad {
		if strings.HasPrefix(bad, path+".") {
			return // a value inside it could not be read; its message is enough
		}
	}
	for _, p := range d.check() {
		c.errorf(join(path, p.key), "%s", p.message)
	}
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (c *checker) rules() {
	s := c.s
	if c.require("name", "a name for the results directory, such as smoke") && !namePattern.MatchString(s.Name) {
		c.errorf("name", "found %q; accepted: letters, digits, '.', '_' and '-' (it names the results directory)", s.Name)
	}

	t := s.Target
	if !s.UsesMock() {
		if c.require("target.base_url", "an OpenAI-compatible base URL such as http://127.0.0.1:8000/v1, or mock") {
			if !strings.HasPrefix(t.BaseURL, "http://") && !strings.HasPrefix(t.BaseURL, "https://") && !strings.HasPrefix(t.BaseURL, "${") {
				c.errorf("target.base_url", "found %q; accepted: an http:// or https:// URL, or mock", t.BaseURL)
			}
		}
		if len(t.Models) == 0 {
			c.require("target.model", "the model name the server serves (see its /v1/models), or target.models")
		}
	}
	c.positive("target.timeout", t.Timeout)
	c.loadTokenizer()
	c.oneOf("target.max_tokens_field", t.MaxTokensField, "max_completion_tokens", "max_tokens")
	c.oneOf("target.endpoint", t.Endpoint, Endpoints...)
	c.endpointRules()
	c.oneOf("target.http", t.HTTP, HTTPVersions...)
	for _, k := range ReservedBodyKeys {
		if _, set := t.ExtraBody[k]; set {
			c.errorf("target.extra_body."+k, "plload sets %s itself; accepted in extra_body: any other key (engine-specific parameters)", k)
		}
	}
	if u := t.ServerMetricsURL; u != "" && u != "off" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		c.errorf("target.server_metrics_url", "found %q; accepted: an http:// or https:// URL of a Prometheus endpoint, or off", u)
	}
	c.gpuMetricsURL()
	if t.TLS.CAFile != "" {
		if _, err := os.Stat(s.resolvePath(t.TLS.CAFile)); err != nil {
			c.errorf("target.tls.ca_file", "cannot read %q: %v; accepted: a PEM file of CA certificates", t.TLS.CAFile, err)
		}
	}
	if t.TLS.InsecureSkipVerify {
		c.warnf("target.tls.insecure_skip_verify", "TLS certificates will not be verified: anyone on the path can read the prompts and the API key")
	}
	if m := t.Mock; m != nil {
		if m.TTFT < 0 {
			c.errorf("target.mock.ttft", "found %s; accepted: a duration ≥ 0", m.TTFT)
		}
		if m.TPS <= 0 {
			c.errorf("target.mock.tps", "found %g; accepted: tokens per second per stream > 0", m.TPS)
		}
		c.fraction("target.mock.jitter", m.Jitter)
		if m.PrefillPerToken < 0 || m.PrefillPerToken > Duration(time.Second) {
			c.errorf("target.mock.prefill_per_token", "found %s; accepted: a duration from 0 to 1s per uncached prompt token, such as 20us", m.PrefillPerToken)
		}
		c.fraction("target.mock.error_rate", m.ErrorRate)
		if m.CacheTTFTFactor < 0 {
			c.errorf("target.mock.cache_ttft_factor", "found %g; accepted: a factor ≥ 0 (1 = a cache hit does not speed up TTFT)", m.CacheTTFTFactor)
		}
		c.mockSlots(m)
		if m.GPUs != nil && (*m.GPUs < 1 || *m.GPUs > 1024) {
			c.errorf("target.mock.gpus", "found %d; accepted: the GPUs the mock's exporter reports, 1 to 1024", *m.GPUs)
		}
		if v := m.GPUIdleWatts; v != nil && !(*v >= 0 && *v <= 100_000) {
			c.errorf("target.mock.gpu_idle_watts", "found %g; accepted: watts per GPU with nothing generating, 0 to 100000", *v)
		}
		if v := m.GPUJoulesPerToken; v != nil && !(*v >= 0 && *v <= 100_000) {
			c.errorf("target.mock.gpu_joules_per_token", "found %g; accepted: joules per generated token over all GPUs, 0 to 100000", *v)
		}
		if t.BaseURL != MockBaseURL && s.has("target.base_url") {
			c.errorf("target.base_url", "found %q with a target.mock block; accepted: base_url mock or no base_url (the mock starts in-process)", t.BaseURL)
		}
	}

	switch {
	case s.Retrieval():
		c.retrievalRules() // texts in, vectors or scores out: no personas, no sessions
	case s.Source() != nil || s.Workload != nil && (s.Workload.Dataset != nil || s.Workload.Trace != nil):
		c.sourceRules() // the file gives the system prompts and the turns
	default:
		c.syntheticRules()
	}
	c.ragRules()
	c.imageRules()
	ss := s.Session
	if ss.RetrievedTokens != nil && s.Workload == nil {
		c.dist("session.retrieved_tokens", *ss.RetrievedTokens)
	}
	c.oneOf("session.language", ss.Language, "en", "ko")
	c.oneOf("session.persona_selection", ss.PersonaSelection, "uniform", "zipf")
	if ss.ZipfS <= 0 {
		c.errorf("session.zipf_s", "found %g; accepted: an exponent > 0", ss.ZipfS)
	}
	if ss.PersonaSelection != "zipf" && s.has("session.zipf_s") && ss.ZipfS != 1 { // 1 is the default a resolved file writes
		c.warnf("session.zipf_s", "zipf_s is used only with persona_selection: zipf")
	}
	if s.has("session.think_time") && !c.bad["session.think_time"] && ss.ThinkTime.MaxValue() > 60 {
		c.warnf("session.think_time", "think time can reach %s (> 60s): sessions will sit idle most of the stage; is that intended?", ss.ThinkTime.format(ss.ThinkTime.MaxValue()))
	}

	c.load()
	c.matrixRules()

	c.slo()
	c.featureRules()
	if p := s.Cost.GPUHourlyUSD; p == nil && !c.bad["cost.gpu_hourly_usd"] {
		c.warnf("cost.gpu_hourly_usd", "not set: $/1M output tokens, $/1K turns and $/session will be N/A; accepted: the hourly price of one GPU in USD (0 for a machine you own)")
	} else if p != nil && *p < 0 {
		c.errorf("cost.gpu_hourly_usd", "found %g; accepted: a price ≥ 0", *p)
	}
	if p := s.Cost.EnergyUSDPerKWh; p != nil && (*p < 0 || math.IsNaN(*p)) {
		c.errorf("cost.energy_usd_per_kwh", "found %g; accepted: a price ≥ 0 of one kilowatt-hour in USD", *p)
	}
	if s.Cost.GPUCount < 1 {
		c.errorf("cost.gpu_count", "found %d; accepted: a whole number ≥ 1", s.Cost.GPUCount)
	}
	if s.has("output.prometheus_port") && (s.Output.PrometheusPort < 1 || s.Output.PrometheusPort > 65535) {
		c.errorf("output.prometheus_port", "found %d; accepted: a TCP port from 1 to 65535", s.Output.PrometheusPort)
	}
}

// personaFile checks a persona file line by line; its lines are kept for the dataset.
func (c *checker) personaFile() {
	s := c.s
	if s.Personas.Source != "file" || s.Personas.File == "" {
		return
	}
	personas, err := readPersonaFile(s.resolvePath(s.Personas.File))
	if err != nil {
		c.errorf("personas.file", "%v", err)
		return
	}
	s.filePersonas = personas
}

var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *checker) env(opts LoadOptions) {
	s := c.s
	missing := c.warnf
	if opts.ForRun {
		missing = c.errorf
	}
	check := func(path, v string) {
		for _, m := range envRef.FindAllStringSubmatch(v, -1) {
			if !envName.MatchString(m[1]) {
				c.errorf(path, "found ${%s}; accepted: ${NAME} with letters, digits and '_'", m[1])
			} else if opts.Getenv(m[1]) == "" {
				missing(path, "environment variable %s is not set", m[1])
			}
		}
		if strings.Count(v, "${") != len(envRef.FindAllString(v, -1)) {
			c.errorf(path, "found an unclosed ${ in %q; accepted: ${NAME}", maskValue(path, v))
		}
	}
	check("target.base_url", s.Target.BaseURL)
	check("target.model", s.Target.Model)
	for k, v := range s.Target.Headers {
		check("target.headers."+k, v)
	}
	keyEnv := func(path, name string) {
		if name == "" {
			return
		}
		if !envName.MatchString(name) {
			c.errorf(path, "found %q; accepted: the name of an environment variable (not the key itself)", name)
		} else if opts.Getenv(name) == "" {
			missing(path, "environment variable %s is not set; requests would go out without an API key", name)
		}
	}
	keyEnv("target.api_key_env", s.Target.APIKeyEnv)
	if rag := s.Session.RAG; rag != nil {
		for name, st := range map[string]*StepTarget{"embed": rag.Embed, "rerank": rag.Rerank} {
			if st != nil {
				p := "session.rag." + name
				check(p+".base_url", st.BaseURL)
				check(p+".model", st.Model)
				keyEnv(p+".api_key_env", st.APIKeyEnv)
			}
		}
	}
}

// resolvePath makes a path from the scenario relative to the scenario file's folder.
func (s *Scenario) resolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) || s.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(s.File), p)
}

// Expand replaces ${NAME} references with the environment's values (for building requests).
func Expand(v string, getenv func(string) string) string {
	return envRef.ReplaceAllStringFunc(v, func(m string) string { return getenv(m[2 : len(m)-1]) })
}

// singleTurnDefault reports whether session.<key> was left out of a scenario whose mode makes
// requests single-turn by default (LoadMode.SingleTurn: request_rate, batch): turns 1, think time 0.
func singleTurnDefault(s *Scenario, key string) bool {
	return s.Load.LoadMode().SingleTurn && (key == "turns" || key == "think_time") && !s.has("session."+key)
}

// syntheticRules checks the personas and the session shape of a synthetic workload.
func (c *checker) syntheticRules() {
	s := c.s
	p := s.Personas
	c.oneOf("personas.source", p.Source, "synthetic", "file")
	switch p.Source {
	case "synthetic":
		if c.require("personas.count", "the number of synthetic personas, ≥ 1") && p.Count < 1 {
			c.errorf("personas.count", "found %d; accepted: a whole number ≥ 1", p.Count)
		}
		if c.require("personas.system_prompt_tokens", "a distribution of system-prompt lengths in tokens, such as {min: 500, max: 1500}") {
			c.dist("personas.system_prompt_tokens", p.SystemPromptTokens)
		}
		if p.File != "" {
			c.errorf("personas.file", "a persona file is read only with personas.source: file")
		}
	case "file":
		c.require("personas.file", "a JSONL file with one {\"name\", \"system_prompt\"} per line")
		if s.has("personas.count") || s.has("personas.system_prompt_tokens") {
			c.warnf("personas", "count and system_prompt_tokens are ignored with personas.source: file")
		}
	}

	ss := s.Session
	for _, f := range []struct {
		key      string
		d        Dist
		accepted string
	}{
		{"turns", ss.Turns, "a distribution of turns per session, such as {min: 2, max: 4}"},
		{"user_input_tokens", ss.UserInputTokens, "a distribution of user-message lengths in tokens"},
		{"max_output_tokens", ss.MaxOutputTokens, "a distribution of the max output tokens asked per turn"},
		{"think_time", ss.ThinkTime, "a distribution of pauses between turns, such as {min: 1s, max: 5s}"},
	} {
		if singleTurnDefault(s, f.key) {
			continue // request_rate's single-turn default (applyDefaults)
		}
		if c.require("session."+f.key, f.accepted) {
			c.dist("session."+f.key, f.d)
		}
	}
}
