package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/urfave/cli/v3"

	"github.com/plload/plload/protocol"
	"github.com/plload/plload/workload"
)

// A run from flags (docs/scenario.md): the flags become keys of a scenario document — the file's, or a small
// synthetic one when there is no file — and that document is read by workload.Parse exactly as a
// file is, so every check and every message is the file's. An error about a key a flag set names the
// flag. There is no second run path: the scenario that comes out runs like any other.

// flagsScenarioName names a run without a scenario file (and its results directory).
const flagsScenarioName = "quick"

// flagsSource labels the flags-only scenario in messages, where a file name would be.
const flagsSource = "(flags)"

// Defaults of a flags-only run (vLLM's random dataset sizes; a minute per stage after 10 s warmup).
const (
	defaultFlagDuration = "60s"
	defaultFlagWarmup   = "10s"
	defaultFlagISL      = 512
	defaultFlagOSL      = 128
)

func scenarioFlags() []cli.Flag {
	s := func(name, usage string) cli.Flag { return &cli.StringFlag{Name: name, Usage: usage} }
	return []cli.Flag{
		s("base-url", "target's OpenAI base URL (http://host:port/v1), or mock for the bundled mock; without a scenario file: required"),
		s("model", "model name the server serves; without a scenario file: required (not with --base-url mock)"),
		s("api-key-env", "environment variable holding the API key (sent as the API's authentication header: Authorization: Bearer, or x-api-key for messages)"),
		s("endpoint", "the API the target speaks: "+strings.Join(workload.Endpoints, ", ")+" (target.endpoint; default chat)"),
		s("http", "the HTTP version: auto (HTTP/2 where TLS negotiates it), 1.1, or 2 (h2c on http://) (target.http; default auto)"),
		s("concurrency", "sessions kept open, one stage per value: 1,4,16 (a session thinking between turns holds no request)"),
		s("request-rate", "requests per second, open loop (Poisson arrivals unless --arrival), one stage per value: 5,10,20"),
		s("arrival", "with --request-rate: the arrival process, poisson (default), gamma (bursty, with --cv) or constant"),
		s("cv", "with --arrival gamma: the CV of the gaps between requests (1 = Poisson, 2 = bursty; vLLM's --burstiness B is cv 1/√B)"),
		s("max-in-flight", "with --request-rate: the most requests in flight at once (default 1000); later ones wait, their lag recorded"),
		s("tokenizer", "the tokenizer every length is counted in: o200k_base (default), cl100k_base, a tokenizer.json (or its directory), or a Hugging Face repo id org/name[@revision] (target.tokenizer)"),
		s("seed", "the seed every length, text and send time is drawn from (default 1)"),
		s("duration", "measured time of every stage (default 60s; with --requests and no file: none, the count ends each stage)"),
		s("requests", "end every stage after N requests were sent, as vllm bench's --num-prompts; without a file and without --duration, a stage is those N requests, all measured (no warmup unless --warmup)"),
		s("warmup", "unmeasured load before every stage's duration (default 10s)"),
		s("isl", "prompt tokens of each synthetic user message (default 512)"),
		s("osl", "max output tokens asked per request (default 128; with --dataset: instead of the file's)"),
		&cli.BoolFlag{Name: "ignore-eos", Usage: "ask for exactly the max output tokens: ignore_eos in every request body (target.extra_body; vLLM and SGLang honour it); --ignore-eos=false drops a file's"},
		s("turns", "turns per session (default 1; with --dataset: at most this many turns of each conversation)"),
		s("dataset", "a dataset file in place of synthetic text (see --dataset-format)"),
		s("dataset-format", "the dataset's format: prompts, openai, sharegpt, aiperf or visionarena"),
		s("slo-ttft-p95", "SLO: TTFT p95 limit, such as 500ms (no SLO flag and no slo section: verdicts N/A)"),
		s("slo-tpot-p99", "SLO: TPOT p99 limit (time per output token), such as 50ms"),
		s("slo-error-rate", "SLO: the most errors ÷ requests allowed, such as 0.01 (not set: errors are reported but not judged)"),
		s("window", "time to absorb: the window in which a stage whose load rises has its SLO latency limits judged, such as 10s (default 10s; slo.window)"),
		s("gpu-hourly-usd", "price of one GPU per hour for the cost columns (not set: cost N/A)"),
		s("gpu-metrics-url", "GPU telemetry: a DCGM exporter's URL (comma-separated for several), nvidia-smi, auto (default: the target host's port 9400) or off (target.gpu_metrics_url)"),
		s("energy-usd-per-kwh", "price of a kilowatt-hour: with GPU telemetry, the energy cost beside the hourly cost (cost.energy_usd_per_kwh)"),
	}
}

// scenarioFlagNames lists the flags above, in their order.
func scenarioFlagNames() []string {
	var out []string
	for _, f := range scenarioFlags() {
		out = append(out, f.Names()[0])
	}
	return out
}

// flagSet is the scenario flags the user set, by name.
type flagSet map[string]string

func setScenarioFlags(cmd *cli.Command) flagSet {
	fs := flagSet{}
	for _, f := range scenarioFlags() {
		name := f.Names()[0]
		switch {
		case !cmd.IsSet(name):
		case isBoolFlag(f):
			fs[name] = strconv.FormatBool(cmd.Bool(name))
		default:
			fs[name] = cmd.String(name)
		}
	}
	return fs
}

func isBoolFlag(f cli.Flag) bool {
	_, ok := f.(*cli.BoolFlag)
	return ok
}

// owner is a flag that wrote a key: issues at the key (or below it) name the flag.
type owner struct {
	path string // YAML path, such as load.stages[1].concurrency
	flag string
}

// scenarioDoc is a scenario being built from flags, with the keys each flag wrote.
type scenarioDoc struct {
	doc    yaml.MapSlice
	owners []owner
	flags  flagSet
	file   string // the scenario file the flags apply to; "" for a run from flags alone
}

// flagOf is the flag that wrote path or one of its parents ("" when none did).
func (d *scenarioDoc) flagOf(path string) string {
	best, flag := -1, ""
	for _, o := range d.owners {
		if (path == o.path || strings.HasPrefix(path, o.path+".") || strings.HasPrefix(path, o.path+"[")) && len(o.path) > best {
			best, flag = len(o.path), o.flag
		}
	}
	return flag
}

// set writes value at the dotted path, creating mappings on the way, and records the flag that wrote it.
func (d *scenarioDoc) set(flag, path string, value any) {
	d.doc = workload.DocSet(d.doc, path, value)
	if flag != "" {
		d.owners = append(d.owners, owner{path: path, flag: flag})
	}
}

func (d *scenarioDoc) get(path string) (any, bool) { return workload.DocGet(d.doc, path) }

func (d *scenarioDoc) del(path string) { d.doc = workload.DocDelete(d.doc, path) }

// scalar is a flag value as YAML would read it typed in a file: a whole number, a finite number, or
// else a string (a duration, or a mistake the scenario's checks will name).
func scalar(s string) any {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && !strings.ContainsAny(s, "xXpP_") {
		return f
	}
	return s
}

// isInfinite says whether a flag value is vllm bench's inf (or another spelling of infinity).
func isInfinite(v string) bool {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return err == nil && math.IsInf(f, 1)
}

// list splits a comma-separated flag value into its items; an empty item is an error.
func list(flag, v string) ([]any, error) {
	var out []any
	for _, item := range strings.Split(v, ",") {
		if strings.TrimSpace(item) == "" {
			return nil, badInput("--%s %q: an empty value in the list; accepted: one value or a comma-separated list such as 1,4,16; nothing was sent", flag, v)
		}
		out = append(out, scalar(item))
	}
	return out, nil
}

// flagsOnlyDoc is the scenario of a run without a file: synthetic single-turn requests of --isl
// prompt tokens asking for --osl, one persona with a one-token system prompt, and a nonce at the
// start of every request, so a session pool that runs dry sends repeats no prefix cache can flatter.
func flagsOnlyDoc(fs flagSet) (yaml.MapSlice, error) {
	var missing []string
	if fs["base-url"] == "" {
		missing = append(missing, "--base-url URL (or mock)")
	}
	if fs["model"] == "" && fs["base-url"] != workload.MockBaseURL {
		missing = append(missing, "--model M")
	}
	if fs["concurrency"] == "" && fs["request-rate"] == "" {
		missing = append(missing, "--concurrency N[,N...] or --request-rate R[,R...]")
	}
	if len(missing) > 0 {
		return nil, badInput("expected a scenario file or, without one, the flags %s; for example: plload run --base-url http://127.0.0.1:8000/v1 --model M --request-rate 20 --duration 60s (see plload run --help); nothing was sent",
			strings.Join(missing, " and "))
	}
	session := yaml.MapSlice{{Key: "turns", Value: 1}, {Key: "user_input_tokens", Value: defaultFlagISL},
		{Key: "max_output_tokens", Value: defaultFlagOSL}, {Key: "think_time", Value: "0s"}}
	return yaml.MapSlice{
		{Key: "name", Value: flagsScenarioName},
		{Key: "seed", Value: 1},
		{Key: "target", Value: yaml.MapSlice{}},
		{Key: "personas", Value: yaml.MapSlice{{Key: "count", Value: 1}, {Key: "system_prompt_tokens", Value: 1}}},
		{Key: "session", Value: session},
		{Key: "workload", Value: yaml.MapSlice{{Key: "nonce", Value: true}}},
		{Key: "load", Value: yaml.MapSlice{}},
	}, nil
}

// applyFlags writes every flag set into the document.
func (d *scenarioDoc) applyFlags() error {
	fs := d.flags
	if fs["concurrency"] != "" && fs["request-rate"] != "" {
		return badInput("--concurrency and --request-rate: both set; accepted: one of them (--concurrency keeps N sessions open, --request-rate sends R requests/s); nothing was sent")
	}
	if slices.ContainsFunc(strings.Split(fs["request-rate"], ","), isInfinite) {
		// vllm bench's default: every request sent at once. An open loop needs a finite schedule; a
		// closed loop is "as fast as the server answers".
		return badInput("--request-rate %q: inf (vllm bench's \"all at once\") is not a rate; accepted: requests per second such as 20, or for as fast as the server answers --concurrency N (N requests in flight, --requests M to end each stage after M); nothing was sent", fs["request-rate"])
	}
	if v := strings.TrimSpace(fs["endpoint"]); strings.HasPrefix(v, "/") {
		return badInput("--endpoint %q: a path, as vllm bench serve's --endpoint takes; accepted: the API's name, %s (the /v1 goes in --base-url); nothing was sent", v, endpointForPath(v))
	}
	if fs["dataset"] != "" && fs["isl"] != "" {
		return badInput("--isl with --dataset: the dataset's text sets the prompt lengths; accepted: one of them; nothing was sent")
	}
	if v, ok := fs["base-url"]; ok {
		d.set("base-url", "target.base_url", v)
		if v != workload.MockBaseURL {
			d.del("target.mock") // a mock block would start the mock instead
		}
	}
	for flag, path := range map[string]string{"model": "target.model", "api-key-env": "target.api_key_env", "gpu-hourly-usd": "cost.gpu_hourly_usd", "energy-usd-per-kwh": "cost.energy_usd_per_kwh",
		"arrival": "load.arrival", "cv": "load.cv", "max-in-flight": "load.max_in_flight", "seed": "seed", "tokenizer": "target.tokenizer"} {
		if v, ok := fs[flag]; ok {
			d.set(flag, path, scalar(v))
		}
	}
	// Strings as given: "1.1" and "2" are versions, not numbers.
	for flag, path := range map[string]string{"endpoint": "target.endpoint", "http": "target.http"} {
		if v, ok := fs[flag]; ok {
			d.set(flag, path, strings.TrimSpace(v))
		}
	}
	if v, ok := fs["gpu-metrics-url"]; ok {
		var urls []string
		for _, u := range strings.Split(v, ",") {
			urls = append(urls, strings.TrimSpace(u))
		}
		d.set("gpu-metrics-url", "target.gpu_metrics_url", urls)
	}
	if v, ok := fs["slo-ttft-p95"]; ok {
		d.del("slo.ttft_p95") // the old key would keep the stricter of the two
		d.set("slo-ttft-p95", "slo.ttft.p95", v)
	}
	if v, ok := fs["slo-tpot-p99"]; ok {
		d.set("slo-tpot-p99", "slo.tpot.p99", v)
	}
	if v, ok := fs["slo-error-rate"]; ok {
		d.del("slo.error_rate_max") // one error-rate key at a time
		d.set("slo-error-rate", "slo.error_rate", scalar(v))
	}
	if v, ok := fs["window"]; ok {
		d.set("window", "slo.window", v)
	}
	if endpoint, _ := d.get("target.endpoint"); workload.IsRetrieval(fmt.Sprint(endpoint)) {
		return d.retrievalFlags(fmt.Sprint(endpoint))
	}
	switch fs["ignore-eos"] {
	case "true":
		d.set("ignore-eos", "target.extra_body.ignore_eos", true)
	case "false":
		d.del("target.extra_body.ignore_eos")
	}
	d.workloadFlags()
	return d.loadFlags()
}

// retrievalFlags writes the flags of an embeddings or rerank run: its requests carry no
// conversation, so the flags-only document's personas and session go, --isl is each text's length
// (an embeddings input, a rerank document), and the flags that shape a chat are refused.
func (d *scenarioDoc) retrievalFlags(endpoint string) error {
	fs := d.flags
	for _, flag := range []string{"osl", "turns", "ignore-eos", "dataset", "dataset-format"} {
		if _, ok := fs[flag]; ok {
			return badInput("--%s with endpoint %s, whose requests generate nothing and carry no conversation; accepted: --isl (each text's tokens), the load flags, or a scenario file's %s: section; nothing was sent", flag, endpoint, endpoint)
		}
	}
	if d.file == "" { // the flags-only document's chat shape: none of it applies
		for _, k := range []string{"personas", "session", "workload"} {
			d.del(k)
		}
	}
	if v, ok := fs["isl"]; ok {
		d.set("isl", map[string]string{"embeddings": "embeddings.input_tokens", "rerank": "rerank.document_tokens"}[endpoint], scalar(v))
	}
	return d.loadFlags()
}

// workloadFlags writes --isl, --osl, --turns, --dataset and --dataset-format.
func (d *scenarioDoc) workloadFlags() {
	fs := d.flags
	if v, ok := fs["dataset"]; ok {
		if abs, err := filepath.Abs(v); err == nil {
			v = abs + "" // the command line's path is the working directory's, not the scenario file's
		}
		// The file's text replaces the synthetic shape; the keys it makes unused would each warn.
		for _, k := range []string{"workload.trace", "personas", "session.turns", "session.user_input_tokens", "session.max_output_tokens"} {
			d.del(k)
		}
		d.set("dataset", "workload.dataset", yaml.MapSlice{{Key: "file", Value: v}})
	}
	if v, ok := fs["dataset-format"]; ok {
		d.set("dataset-format", "workload.dataset.format", v)
	}
	_, dataset := d.get("workload.dataset")
	if v, ok := fs["isl"]; ok {
		d.set("isl", "session.user_input_tokens", scalar(v))
	}
	if v, ok := fs["osl"]; ok {
		if dataset {
			d.set("osl", "workload.dataset.output_tokens", scalar(v))
		} else {
			d.set("osl", "session.max_output_tokens", scalar(v))
		}
	}
	if v, ok := fs["turns"]; ok {
		if dataset {
			d.set("turns", "workload.dataset.max_turns", scalar(v))
		} else {
			d.set("turns", "session.turns", scalar(v))
		}
	}
}

// loadFlags writes the load mode and stages: a list flag replaces the stages (one per value; warmup
// and duration from the flags, else from the file's stage at that place, else the defaults);
// --duration and --warmup alone set them on every stage of the file.
func (d *scenarioDoc) loadFlags() error {
	fs := d.flags
	mode, key, flag := "", "", ""
	switch {
	case fs["concurrency"] != "":
		mode, key, flag = workload.ModeConcurrency, "concurrency", "concurrency"
	case fs["request-rate"] != "":
		mode, key, flag = workload.ModeRequestRate, "rate", "request-rate"
	}
	old, _ := d.get("load.stages")
	oldStages, _ := old.([]any)
	if mode == "" {
		for i := range oldStages {
			if v, ok := fs["requests"]; ok {
				d.owners = append(d.owners, owner{path: fmt.Sprintf("load.stages[%d].requests", i), flag: "requests"})
				if st, ok := oldStages[i].(yaml.MapSlice); ok {
					oldStages[i] = workload.DocSet(st, "requests", scalar(v))
				}
			}
			for _, k := range []string{"warmup", "duration"} {
				if v, ok := fs[k]; ok {
					d.owners = append(d.owners, owner{path: fmt.Sprintf("load.stages[%d].%s", i, k), flag: k})
					if st, ok := oldStages[i].(yaml.MapSlice); ok {
						oldStages[i] = workload.DocSet(st, k, v)
					}
				}
			}
		}
		return nil
	}
	values, err := list(flag, fs[flag])
	if err != nil {
		return err
	}
	if m, _ := d.get("load.mode"); m != mode {
		for _, k := range workload.ModeLoadKeys() {
			if !workload.ModeOf(mode).ReadsLoadKey(k) {
				d.del("load." + k) // keys of the mode the file had, which the new one does not read
			}
		}
	}
	d.set(flag, "load.mode", mode)
	d.keepSingleTurn(flag, mode)
	stages := make([]any, len(values))
	for i, v := range values {
		st := yaml.MapSlice{{Key: key, Value: v}}
		if n, ok := fs["requests"]; ok {
			st = append(st, yaml.MapItem{Key: "requests", Value: scalar(n)})
			d.owners = append(d.owners, owner{path: fmt.Sprintf("load.stages[%d].requests", i), flag: "requests"})
		}
		for _, k := range []string{"warmup", "duration"} {
			val, ok := fs[k]
			if !ok {
				val = map[string]string{"warmup": defaultFlagWarmup, "duration": defaultFlagDuration}[k]
				if _, counted := fs["requests"]; counted && len(oldStages) == 0 {
					// A count without a time is vllm bench's --num-prompts: that many requests, every
					// one measured, however long they take.
					if k == "warmup" {
						st = append(st, yaml.MapItem{Key: k, Value: "0s"})
					}
					continue
				}
				if len(oldStages) > 0 {
					if fileStage, isMap := oldStages[min(i, len(oldStages)-1)].(yaml.MapSlice); isMap {
						if j := slices.IndexFunc(fileStage, func(it yaml.MapItem) bool { return it.Key == k }); j >= 0 {
							st = append(st, yaml.MapItem{Key: k, Value: fileStage[j].Value})
						}
						continue // a file stage without a warmup has none: the flags' default is for runs without a file
					}
				}
			}
			st = append(st, yaml.MapItem{Key: k, Value: val})
			if _, set := fs[k]; set {
				d.owners = append(d.owners, owner{path: fmt.Sprintf("load.stages[%d].%s", i, k), flag: k})
			}
		}
		stages[i] = st
	}
	d.set(flag, "load.stages", stages)
	return nil
}

// keepSingleTurn writes request_rate's single-turn defaults (session.turns 1, think_time 0s) into a
// synthetic scenario that leaves them out when a flag switches it to another mode, which requires them.
func (d *scenarioDoc) keepSingleTurn(flag, mode string) {
	_, dataset := d.get("workload.dataset")
	_, trace := d.get("workload.trace")
	endpoint, _ := d.get("target.endpoint")
	if workload.ModeOf(mode).SingleTurn || dataset || trace || workload.IsRetrieval(fmt.Sprint(endpoint)) {
		return // a retrieval stage's request is its session: no session keys at all
	}
	for k, v := range map[string]any{"session.turns": 1, "session.think_time": "0s"} {
		if _, ok := d.get(k); !ok {
			d.set(flag, k, v)
		}
	}
}

// scenarioFromFlags builds the scenario of `plload run [SCENARIO.yaml] --flags…`: file is "" for a
// run from flags alone. It returns the scenario and its warnings, or an exit-2 error listing every
// problem, each naming the flag that set the key when one did.
func scenarioFromFlags(file string, fs flagSet, opts workload.LoadOptions) (*workload.Scenario, workload.Issues, error) {
	d := &scenarioDoc{flags: fs, file: file}
	var original []byte
	if file == "" {
		doc, err := flagsOnlyDoc(fs)
		if err != nil {
			return nil, nil, err
		}
		d.doc = doc
	} else {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, badInput("%s: cannot read the scenario file: %v; nothing was sent", file, err)
		}
		original = data
		if err := yaml.UnmarshalWithOptions(data, &d.doc, yaml.UseOrderedMap()); err != nil || d.doc == nil {
			return fileIssues(file, data, opts) // the file's own syntax errors, with their lines
		}
	}
	if err := d.applyFlags(); err != nil {
		return nil, nil, err
	}
	sc, issues, err := d.parse(file, original, opts)
	if err == nil && file == "" && d.sizePools(sc) {
		sc, issues, err = d.parse(file, original, opts)
	}
	if err != nil {
		return nil, nil, err
	}
	return sc, issues.Warnings(), nil
}

// parse reads the document as workload.Parse reads a file, with each issue relabelled.
func (d *scenarioDoc) parse(file string, original []byte, opts workload.LoadOptions) (*workload.Scenario, workload.Issues, error) {
	name := file
	if name == "" {
		name = flagsSource
	}
	merged, err := yaml.MarshalWithOptions(d.doc, yaml.IndentSequence(true))
	if err != nil {
		return nil, nil, badInput("%s: writing the scenario from the flags: %v", name, err)
	}
	sc, issues := workload.Parse(name, merged, opts)
	issues = d.relabel(issues, file, original, opts)
	if err := issues.Err(); err != nil {
		return nil, nil, exitErr(exitBadInput, fmt.Errorf("%d error(s) in the scenario (%s); nothing was sent:\n%w", len(issues.Errors()), sourceWords(file), err))
	}
	return sc, issues, nil
}

// sizePools gives each concurrency stage of a flags-only run a pool of twice the sessions it is
// expected to start, and reports whether it changed anything: single-turn sessions end fast, and
// past the default pool of 3 per slot sessions are drawn fresh (load.session_reuse) but are not in
// the stage's dataset.jsonl; a pool of their size keeps what the stage is likely to send in the file.
func (d *scenarioDoc) sizePools(sc *workload.Scenario) bool {
	old, _ := d.get("load.stages")
	stages, _ := old.([]any)
	if sc.Load.IsOpenLoop() || len(stages) != len(sc.Load.Stages) {
		return false
	}
	for i, st := range sc.Load.Stages {
		m, ok := stages[i].(yaml.MapSlice)
		if !ok {
			return false
		}
		n := int(math.Ceil(2*sc.EstimateStage(st).SessionsNeeded)) + st.Concurrency
		stages[i] = append(m, yaml.MapItem{Key: "sessions", Value: n})
	}
	return true
}

func sourceWords(file string) string {
	if file == "" {
		return "from the flags"
	}
	return file + " with the flags"
}

// fileIssues reports a scenario file that is not a YAML mapping by its own checks.
func fileIssues(file string, data []byte, opts workload.LoadOptions) (*workload.Scenario, workload.Issues, error) {
	_, issues := workload.Parse(file, data, opts)
	err := issues.Err()
	if err == nil {
		err = fmt.Errorf("%s: accepted: a YAML mapping (name:, target:, load: ...)", file)
	}
	return nil, nil, exitErr(exitBadInput, fmt.Errorf("%d error(s) in the scenario; nothing was sent:\n%w", max(1, len(issues.Errors())), err))
}

// relabel makes each issue point at what the user wrote: the flag, for a key a flag set (the
// document's lines are not the user's); the file's own line, for a key the file set.
func (d *scenarioDoc) relabel(issues workload.Issues, file string, original []byte, opts workload.LoadOptions) workload.Issues {
	var fromFile workload.Issues
	if file != "" {
		_, fromFile = workload.Parse(file, original, opts)
	}
	var out workload.Issues
	for _, is := range issues {
		c := *is
		flag := d.flagOf(is.Path)
		unset, isUnset := map[string]string{
			"slo":                 "no SLO flag (--slo-ttft-p95, --slo-tpot-p99, --slo-error-rate): every stage's SLO verdict will be N/A and goodput unknown",
			"cost.gpu_hourly_usd": "no --gpu-hourly-usd: $/1M output tokens, $/1K turns and $/session will be N/A",
		}[is.Path]
		if endpoint, _ := d.get("target.endpoint"); workload.IsRetrieval(fmt.Sprint(endpoint)) { // no first token; nothing generated
			unset = map[string]string{
				"slo":                 "no SLO flag (--slo-error-rate; a latency limit takes a scenario file's slo.e2e): every stage's SLO verdict will be N/A",
				"cost.gpu_hourly_usd": "no --gpu-hourly-usd: $/1M input tokens and $/1K requests will be N/A",
			}[is.Path]
		}
		switch {
		case file == "" && flag == "" && isUnset && is.Severity == workload.SeverityWarning:
			c.File, c.Line, c.Column, c.Path, c.Message = flagsSource, 0, 0, "", unset
		case flag != "":
			c.File, c.Line, c.Column = "--"+flag, 0, 0
			if v, ok := d.flags[strings.SplitN(flag, ",", 2)[0]]; ok {
				c.File = fmt.Sprintf("--%s %q", flag, v)
			}
		default:
			c.Line, c.Column = 0, 0 // the merged document's lines are not the file's
			if i := slices.IndexFunc(fromFile, func(o *workload.Issue) bool { return o.Path == is.Path && o.Message == is.Message }); i >= 0 {
				c = *fromFile[i]
			}
		}
		out = append(out, &c)
	}
	return out
}

// runInput reads what `plload run` runs: the scenario file, the file with flags over it, or the flags
// alone. overridden says whether flags changed or made the scenario (the file alone then no longer
// reproduces the run; its scenario.resolved.yaml does).
func runInput(cmd *cli.Command) (sc *workload.Scenario, warnings workload.Issues, overridden bool, err error) {
	if len(setScenarioFlags(cmd)) == 0 && cmd.Args().Len() == 0 {
		_, err = flagsOnlyDoc(flagSet{}) // says what a run without a file needs
		return nil, nil, false, err
	}
	return scenarioInput(cmd, workload.LoadOptions{ForRun: true})
}

// scenarioInput is the scenario of a command that takes [SCENARIO.yaml] and the scenario flags (run,
// validate): the file as it is when no flag is set.
func scenarioInput(cmd *cli.Command, opts workload.LoadOptions) (sc *workload.Scenario, warnings workload.Issues, overridden bool, err error) {
	fs := setScenarioFlags(cmd)
	if len(fs) == 0 {
		sc, warnings, err = loadScenario(cmd, opts)
		return sc, warnings, false, err
	}
	if cmd.Args().Len() > 1 {
		return nil, nil, true, badInput("%s: expected at most one argument, the scenario file (got %d: %s); flags go before or after it as --name value; nothing was sent",
			cmd.Name, cmd.Args().Len(), strings.Join(cmd.Args().Slice(), " "))
	}
	sc, warnings, err = scenarioFromFlags(cmd.Args().First(), fs, opts)
	return sc, warnings, true, err
}

// runExamples is run's USAGE: the short examples a user looks for first.
const runExamples = `plload run SCENARIO.yaml [--out DIR]
plload run --base-url http://127.0.0.1:8000/v1 --model M --request-rate 20 --duration 60s
plload run --base-url mock --concurrency 1,4,16 --duration 20s --warmup 2s   # the bundled mock
plload run SCENARIO.yaml --request-rate 5,10 --slo-ttft-p95 500ms            # flags override the file`

// flagsHelp opens run's description: what the flags make, and the two words other tools use
// differently.
const flagsHelp = "Without a scenario file the flags make one: synthetic single-turn requests of --isl prompt tokens\n" +
	"asking for --osl output tokens (or --dataset), one stage per value of --concurrency or\n" +
	"--request-rate, --warmup then --duration each. With a file, the flags override its keys. Either\n" +
	"way the results hold scenario.resolved.yaml, and plload run of it repeats the run. No SLO flag\n" +
	"or slo section: SLO verdicts and goodput are N/A; no --gpu-hourly-usd: cost is N/A.\n\n" +
	"--concurrency counts open sessions, not requests: a session thinking between turns holds no\n" +
	"request. With --turns 1 (the default) the two are the same, as in vllm bench --max-concurrency.\n" +
	"Each stage reports the requests actually in flight (mean and max) beside the open sessions.\n" +
	"--request-rate is open loop: requests are due on a Poisson schedule drawn from the seed whether\n" +
	"or not earlier ones have answered (at most load.max_in_flight, 1000, at once; a late one waits and\n" +
	"its lag is recorded). With --turns above 1, sessions arrive at that rate and their turns follow.\n\n"

// endpointForPath names the API whose path ends v (vllm bench serve's --endpoint /v1/completions is
// plload's completions), or lists them all.
func endpointForPath(v string) string {
	var all []string
	for _, name := range workload.Endpoints {
		api, err := protocol.For(name)
		if err != nil {
			continue
		}
		if strings.HasSuffix(v, api.Path()) {
			return fmt.Sprintf("here %s (POST …/v1%s)", name, api.Path())
		}
		all = append(all, fmt.Sprintf("%s (POST …/v1%s)", name, api.Path()))
	}
	return "one of " + strings.Join(all, ", ")
}
