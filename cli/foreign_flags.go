package cli

import (
	"context"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// A flag the command does not define ends the command with one line and exit 2: the flag as the
// user typed it and where to look, or, for a flag of vllm bench serve, AIPerf or GuideLLM, what plload
// calls it. urfave's own answer is the whole help followed by "flag provided but not defined: -name"
// (one dash, not what was typed), and the line that matters scrolls away.

// foreignFlag is another tool's flag and plload's way of saying it: flag for a command that takes
// plload run's scenario flags (run, validate), key for one that reads a scenario file only (search,
// matrix, ab, ...); an empty key means the flag advice holds for both.
type foreignFlag struct {
	tool string
	flag string
	key  string
}

const (
	vllm     = "vllm bench serve"
	aiperf   = "AIPerf"
	guidellm = "GuideLLM"
	vllmAIP  = "vllm bench serve and AIPerf"
)

// resultsAdvice answers every "save the results" flag: plload has nothing to switch on.
const resultsAdvice = "results are always written, every request's record and vllm_bench_result.json included, under plload run's --out DIR (default results/; output.dir in a scenario)"

// foreignFlags is keyed by the other tool's flag name. A name plload also defines on a command (run's
// --seed, --model, --concurrency, ab's --target) never reaches this table there: only commands that
// lack it do, which is why the key advice exists.
var foreignFlags = map[string]foreignFlag{
	// vllm bench serve
	"max-concurrency":   {vllm, "--concurrency N (N sessions open; one request each with --turns 1), or with --request-rate: --max-in-flight N", "load.mode: concurrency with each stage's concurrency: N, or with request_rate: load.max_in_flight: N"},
	"num-prompts":       {vllm, "--requests N (each stage ends after N requests; or --duration for a time)", "each stage's requests: N (plload run's --requests N)"},
	"burstiness":        {vllm, "--arrival gamma --cv C, where C = 1/√B (B 0.25 → --cv 2)", "load.arrival: gamma and load.cv: C, where C = 1/√B (B 0.25 → cv 2)"},
	"random-input-len":  {vllm, "--isl N", "session.user_input_tokens: N"},
	"random-output-len": {vllm, "--osl N", "session.max_output_tokens: N"},
	"random-range-ratio": {vllm, "a length distribution in a scenario file, such as session.user_input_tokens: {min: 400, max: 600} (--isl is one fixed length)",
		"a length distribution, such as session.user_input_tokens: {min: 400, max: 600}"},
	"dataset-name": {vllm, "--dataset FILE --dataset-format prompts|openai|sharegpt|aiperf (synthetic text is the default)", "workload.dataset: {file: F, format: prompts|openai|sharegpt|aiperf} (synthetic text is the default)"},
	"dataset-path": {vllm, "--dataset FILE", "workload.dataset.file"},
	// --host and --port are rewritten with the values typed (hostPortAdvice).
	"host": {vllm, "--base-url http://HOST:PORT/v1", "target.base_url: http://HOST:PORT/v1"},
	"port": {vllm, "--base-url http://HOST:PORT/v1", "target.base_url: http://HOST:PORT/v1"},
	"endpoint": {vllm, "--endpoint API, the API's name, not its path: chat (POST /v1/chat/completions, the default), completions (POST /v1/completions), or another of target.endpoint's APIs (docs/apis.md); the /v1 goes in --base-url",
		"target.endpoint: the API's name, not its path: chat (POST /v1/chat/completions, the default), completions (POST /v1/completions), or another API of docs/apis.md; the /v1 goes in target.base_url"},
	"backend":            {vllm, "nothing to pick: plload speaks the OpenAI API, chat completions unless target.endpoint: completions in a scenario file (vllm bench's --backend openai), streamed unless target.stream: false", ""},
	"save-result":        {vllm, resultsAdvice, ""},
	"save-detailed":      {vllm, resultsAdvice, ""},
	"result-dir":         {vllm, "--out DIR of plload run (" + resultsAdvice + ")", "output.dir: DIR, or plload run's --out DIR"},
	"result-filename":    {vllm, resultsAdvice, ""},
	"disable-tqdm":       {vllm, "--quiet (plload run: no progress display)", ""},
	"served-model-name":  {vllm, "--model M (the name sent in every request)", "target.model: M"},
	"percentile-metrics": {vllm, "nothing: every stage.json has mean, p50, p90, p95, p99, max and std of TTFT, TTFO, TPOT, ITL and E2E", ""},
	"metric-percentiles": {vllm, "nothing: every stage.json has mean, p50, p90, p95, p99, max and std of TTFT, TTFO, TPOT, ITL and E2E", ""},
	"goodput":            {vllmAIP, "--slo-ttft-p95 / --slo-tpot-p99 / --slo-error-rate, or slo: {ttft: {p95: 500ms}, tpot: {p99: 50ms}, e2e: {p90: 10s}} in a scenario", "slo: {ttft: {p95: 500ms}, tpot: {p99: 50ms}, e2e: {p90: 10s}}"},
	"temperature":        {vllm, "target.extra_body: {temperature: T} in a scenario file", "target.extra_body: {temperature: T}"},
	"top-p":              {vllm, "target.extra_body: {top_p: P} in a scenario file", "target.extra_body: {top_p: P}"},
	"header":             {vllmAIP, "target.headers: {Name: value} in a scenario file", "target.headers: {Name: value}"},
	// AIPerf
	"url":                           {aiperf, "--base-url http://host:port/v1", "target.base_url: http://host:port/v1"},
	"request-count":                 {aiperf, "--requests N (each stage ends after N requests; or --duration for a time)", "each stage's requests: N (plload run's --requests N)"},
	"synthetic-input-tokens-mean":   {aiperf, "--isl N", "session.user_input_tokens: N"},
	"synthetic-input-tokens-stddev": {aiperf, "a length distribution in a scenario file, such as session.user_input_tokens: {dist: lognormal, mean: 512, sigma: 0.3}", "a length distribution, such as session.user_input_tokens: {dist: lognormal, mean: 512, sigma: 0.3}"},
	"output-tokens-mean":            {aiperf, "--osl N", "session.max_output_tokens: N"},
	"output-tokens-stddev":          {aiperf, "a length distribution in a scenario file, such as session.max_output_tokens: {dist: lognormal, mean: 128, sigma: 0.3}", "a length distribution, such as session.max_output_tokens: {dist: lognormal, mean: 128, sigma: 0.3}"},
	"benchmark-duration":            {aiperf, "--duration", "each stage's duration"},
	"warmup-request-count":          {aiperf, "--warmup 10s (a time of real load, left out of the numbers)", "each stage's warmup: 10s (a time of real load, left out of the numbers)"},
	"endpoint-type":                 {aiperf, "--endpoint API: chat (the default), completions, or another API of docs/apis.md", "target.endpoint: chat (the default), completions, or another API of docs/apis.md"},
	"streaming":                     {aiperf, "nothing: plload streams unless target.stream: false", ""},
	"artifact-dir":                  {aiperf, "--out DIR of plload run (" + resultsAdvice + ")", "output.dir: DIR, or plload run's --out DIR"},
	"random-seed":                   {aiperf, "--seed N", "seed: N at the scenario's top level"},
	"input-file":                    {aiperf, "--dataset FILE", "workload.dataset.file"},
	"custom-dataset-type":           {aiperf, "--dataset-format prompts|openai|sharegpt|aiperf", "workload.dataset.format"},
	"arrival-pattern":               {aiperf, "--arrival poisson|gamma|constant (with --request-rate)", "load.arrival: poisson|gamma|constant"},
	"api-key":                       {aiperf, "--api-key-env VAR, the name of an environment variable holding the key (a key typed on the command line is in the shell's history)", "target.api_key_env: VAR"},
	"extra-inputs":                  {aiperf, "target.extra_body: {name: value} in a scenario file (--ignore-eos for ignore_eos)", "target.extra_body: {name: value}"},
	// GuideLLM
	"target": {guidellm, "--base-url http://host:port/v1", "target.base_url: http://host:port/v1"},
	"rate-type": {guidellm, "synchronous → --concurrency 1; concurrent or throughput → --concurrency N; poisson → --request-rate R; constant → --request-rate R --arrival constant; sweep → plload search",
		"synchronous → load.mode: concurrency, concurrency: 1; concurrent or throughput → concurrency: N; poisson → load.mode: request_rate, rate: R; constant → also load.arrival: constant; sweep → plload search"},
	"rate":         {guidellm, "--request-rate R (poisson, constant) or --concurrency N (concurrent), a comma-separated list for one stage each", "each stage's rate: R (load.mode: request_rate) or concurrency: N"},
	"max-requests": {guidellm, "--requests N (each stage ends after N requests; or --duration for a time)", "each stage's requests: N (plload run's --requests N)"},
	"max-seconds":  {guidellm, "--duration 60s", "each stage's duration: 60s"},
	"data":         {guidellm, "--dataset FILE, or --isl N --osl N for synthetic prompts", "workload.dataset.file, or session.user_input_tokens and session.max_output_tokens"},
	"output-path":  {guidellm, "--out DIR of plload run (" + resultsAdvice + ")", "output.dir: DIR, or plload run's --out DIR"},
	"processor":    {guidellm, "--tokenizer (a tokenizer.json, its directory or a Hugging Face id)", "target.tokenizer"},
	// Flags of another tool that plload run also has, for the commands that do not.
	"seed":         {vllmAIP, "--seed N", "seed: N at the scenario's top level (plload run's --seed N)"},
	"model":        {vllmAIP, "--model M", "target.model: M (plload run's --model M)"},
	"base-url":     {vllm, "--base-url", "target.base_url (plload run's --base-url)"},
	"concurrency":  {aiperf, "--concurrency N", "load.mode: concurrency with each stage's concurrency: N (plload run's --concurrency N)"},
	"request-rate": {vllmAIP, "--request-rate R", "load.mode: request_rate with each stage's rate: R (plload run's --request-rate R)"},
	"tokenizer":    {vllmAIP, "--tokenizer", "target.tokenizer (plload run's --tokenizer)"},
	"ignore-eos":   {vllm, "--ignore-eos", "target.extra_body: {ignore_eos: true} (plload run's --ignore-eos)"},
}

// onUsageErrors gives cmd and every command below it the one-line usage error; args is the command
// line as typed (args[0] the program), so the error can quote a flag with its own dashes.
func onUsageErrors(cmd *cli.Command, args []string) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		return usageError(c, err, args)
	}
	for _, sub := range cmd.Commands {
		onUsageErrors(sub, args)
	}
}

// usageError is err in one line: the command, what was wrong and where its flags are listed.
func usageError(cmd *cli.Command, err error, args []string) error {
	// Run prefixes "plload:", so the command's own name is enough before the message.
	help := "see " + cmd.FullName() + " --help"
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		// A missing value or a value the flag's type refuses: urfave's words, the typed dashes restored.
		msg := err.Error()
		if n, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
			msg = "flag " + typedFlag(strings.TrimLeft(n, "-"), args) + " needs a value"
		}
		return badInput("%s%s; %s", where(cmd), msg, help)
	}
	typed := typedFlag(name, args)
	f, ok := foreignFlags[name]
	if !ok {
		return badInput("%sunknown flag %s%s; %s", where(cmd), typed, otherCommands(cmd, name), help)
	}
	advice := f.flag
	if f.key != "" && !takesRunFlags(cmd) {
		advice = f.key
	}
	if name == "host" || name == "port" {
		advice = hostPortAdvice(advice, args)
	}
	return badInput("%s%s is a flag of %s, not of %s; in plload: %s; nothing was sent; %s", where(cmd), typed, f.tool, cmd.FullName(), advice, help)
}

// where opens a message with the command's name: "run: " (nothing for plload itself, which Run's
// "plload:" already names).
func where(cmd *cli.Command) string {
	if cmd.Root() == cmd {
		return ""
	}
	return cmd.Name + ": "
}

// typedFlag is the flag as the command line spells it (--name or -name), without a value after =.
func typedFlag(name string, args []string) string {
	for _, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		if strings.HasPrefix(flag, "-") && strings.TrimLeft(flag, "-") == name {
			return flag
		}
	}
	return "--" + name
}

// takesRunFlags says whether cmd reads plload run's scenario flags (run and validate do).
func takesRunFlags(cmd *cli.Command) bool {
	return slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "base-url") })
}

// otherCommands names the plload commands that do define the flag, as a hint: " (a flag of plload run, validate)".
func otherCommands(cmd *cli.Command, name string) string {
	var with []string
	for _, c := range cmd.Root().Commands {
		if slices.ContainsFunc(c.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) }) {
			with = append(with, c.Name)
		}
	}
	if len(with) == 0 {
		return ""
	}
	return " (a flag of plload " + strings.Join(with, ", ") + ")"
}

// hostPortAdvice fills HOST and PORT with the values typed after --host and --port, else vllm bench
// serve's defaults (127.0.0.1 and 8000).
func hostPortAdvice(advice string, args []string) string {
	host, port := "127.0.0.1", "8000"
	for i, a := range args {
		flag, val, hasVal := strings.Cut(a, "=")
		if !hasVal && i+1 < len(args) {
			val = args[i+1]
		}
		switch {
		case !strings.HasPrefix(flag, "-") || val == "" || strings.HasPrefix(val, "-"):
		case strings.TrimLeft(flag, "-") == "host":
			host = val
		case strings.TrimLeft(flag, "-") == "port":
			port = val
		}
	}
	return strings.NewReplacer("HOST", host, "PORT", port).Replace(advice)
}
