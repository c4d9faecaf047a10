package workload

import (
	"fmt"
	"strings"
)

// Trace formats (docs/data.md).
const (
	FormatMooncake    = "mooncake"
	FormatAzure       = "azure"
	FormatBurstGPT    = "burstgpt"
	FormatQwenBailian = "qwen_bailian"
)

// sourceRules checks the workload: block and reads its file, so a bad line is an error at validate,
// before any traffic.
func (c *checker) sourceRules() {
	s := c.s
	ds := s.Workload
	if ds == nil {
		return
	}
	switch {
	case ds.Dataset == nil && ds.Trace == nil:
		return // only a nonce: the synthetic workload, checked as usual
	case ds.Dataset != nil && ds.Trace != nil:
		c.errorf("workload.trace", "a workload has one source; accepted: workload.dataset or workload.trace, not both")
		return
	}
	if s.has("personas") {
		c.warnf("personas", "personas are ignored with workload.%s: the system prompts come from the file", sourceKey(ds))
	}
	for _, k := range []string{"turns", "user_input_tokens", "max_output_tokens", "retrieved_tokens"} {
		if s.has("session." + k) {
			c.warnf("session."+k, "ignored with workload.%s: %s", sourceKey(ds), usedInstead(ds, k))
		}
	}
	if s.has("session.think_time") && !c.bad["session.think_time"] {
		c.dist("session.think_time", s.Session.ThinkTime)
	}
	if d := ds.Dataset; d != nil {
		c.datasetRules(d)
		return
	}
	c.traceRules(ds.Trace)
}

// usedInstead says what decides a session key's value when a file is the workload's source, naming
// the key that sets it, so a user who wrote session.KEY knows where to write it instead.
func usedInstead(ds *DataSource, key string) string {
	if ds.Dataset == nil {
		switch key {
		case "max_output_tokens":
			return "the trace's output lengths are used instead, each asked exactly"
		case "turns":
			return "the trace gives one turn per request instead"
		}
		return "the trace's input lengths are used instead"
	}
	switch key {
	case "turns":
		return "the file's turns are used instead (workload.dataset.max_turns caps them)"
	case "user_input_tokens":
		return "the file's prompts are used instead (workload.dataset.min_input_tokens and max_input_tokens filter them)"
	case "max_output_tokens":
		return "workload.dataset.output_tokens is used instead (from_file: each line's own output length)"
	}
	return "the file's prompts carry any retrieved text instead"
}

func sourceKey(ds *DataSource) string {
	if ds.Dataset != nil {
		return "dataset"
	}
	return "trace"
}

func (c *checker) datasetRules(d *DatasetSpec) {
	s := c.s
	const p = "workload.dataset"
	ok := c.require(p+".file", "a dataset file, relative to the scenario")
	if c.require(p+".format", "prompts, openai, sharegpt, aiperf or visionarena") {
		c.oneOf(p+".format", d.Format, FormatPrompts, FormatOpenAI, FormatShareGPT, FormatAIPerf, FormatVisionArena)
	}
	c.oneOf(p+".order", d.Order, "sequential", "shuffle")
	c.oneOf(p+".history", d.History, "live", "recorded")
	if d.MaxTurns < 0 {
		c.errorf(p+".max_turns", "found %d; accepted: a whole number ≥ 1, or 0 for every turn", d.MaxTurns)
	}
	if d.MinInputTokens < 0 || d.MaxInputTokens < 0 || d.MaxInputTokens > 0 && d.MinInputTokens > d.MaxInputTokens {
		c.errorf(p+".min_input_tokens", "min %d and max %d; accepted: whole numbers ≥ 0 with min ≤ max (0 = no bound)", d.MinInputTokens, d.MaxInputTokens)
	}
	if d.OutputTokens.Dist != nil && !c.bad[p+".output_tokens"] {
		c.dist(p+".output_tokens", *d.OutputTokens.Dist)
	}
	if d.History == "recorded" && d.Format == FormatPrompts {
		c.errorf(p+".history", "a prompts file has no recorded answers; accepted with prompts: live")
	}
	if s.has(p+".max_image_bytes") && !c.bad[p+".max_image_bytes"] {
		if d.MaxImageBytes < 1 {
			c.errorf(p+".max_image_bytes", "found %d; accepted: the most bytes one encoded image of the dataset may take, ≥ 1 (default %d, 20 MB)", d.MaxImageBytes, DefaultImageMaxBytes)
		} else if !carriesImages(d.Format) {
			c.warnf(p+".max_image_bytes", "ignored with format %s, whose lines carry no images (format openai's image_url parts and visionarena's images do)", d.Format)
		}
	}
	if !ok || len(c.issues.Errors()) > 0 {
		return
	}
	src, err := s.readDatasetSource(d)
	if err != nil {
		c.errorf(p+".file", "%v", err)
		return
	}
	for _, w := range src.Warnings {
		c.warnf(p+".file", "%s", w)
	}
	c.datasetImagesSent(src)
	s.source = src
}

// datasetImagesSent refuses a dataset with images for an endpoint whose requests carry none: its
// turns would go without them, a different workload from the file's.
func (c *checker) datasetImagesSent(src *Source) {
	e := c.s.Target.Endpoint
	switch e {
	case "completions", "embeddings", "rerank":
	default:
		return
	}
	for _, ss := range src.Sessions {
		for _, t := range ss.Turns {
			if len(t.Images) > 0 {
				c.errorf("workload.dataset.file", "%s line %d carries images, which target.endpoint %s cannot send; accepted: a dataset with images with target.endpoint chat, messages or responses", src.Path, t.Line, e)
				return
			}
		}
	}
}

func (c *checker) traceRules(t *TraceSpec) {
	s := c.s
	const p = "workload.trace"
	ok := c.require(p+".file", "a trace file, relative to the scenario")
	if c.require(p+".format", "mooncake, azure, burstgpt or qwen_bailian") {
		c.oneOf(p+".format", t.Format, FormatMooncake, FormatAzure, FormatBurstGPT, FormatQwenBailian)
	}
	if t.BlockTokens < 0 {
		c.errorf(p+".block_tokens", "found %d; accepted: tokens per hash id ≥ 1", t.BlockTokens)
	}
	if t.MaxRequests < 0 {
		c.errorf(p+".max_requests", "found %d; accepted: a whole number ≥ 1, or 0 for every request", t.MaxRequests)
	}
	if t.Start < 0 || t.Duration < 0 {
		c.errorf(p+".start", "accepted: start and duration ≥ 0")
	}
	for k := range t.Filter {
		if t.Format != FormatBurstGPT || (k != "model" && k != "log_type") {
			c.errorf(p+".filter."+k, "accepted: filter.model and filter.log_type, with format burstgpt")
		}
	}
	if !ok || len(c.issues.Errors()) > 0 {
		return
	}
	src, err := s.readTrace(s.resolvePath(t.File), t)
	if err != nil {
		c.errorf(p+".file", "%v", err)
		return
	}
	src.File = t.File
	for _, w := range src.Warnings {
		c.warnf(p+".file", "%s", w)
	}
	s.source = src
}

// readDatasetSource reads workload.dataset's file and applies its options: history cut at
// max_turns and at the first request past max_input_tokens, conversations whose first request is
// under min_input_tokens left out, seeded shuffle. Lengths are counts of the text in the scenario's tokenizer.
func (s *Scenario) readDatasetSource(d *DatasetSpec) (*Source, error) {
	path := s.resolvePath(d.File)
	raw, lines, err := readDatasetWith(path, d.Format, d.ImageLimit())
	if err != nil {
		return nil, err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the dataset: %v", err)
	}
	g, err := s.newTextGen()
	if err != nil {
		return nil, err
	}
	src := &Source{File: d.File, Path: path, Format: d.Format, SHA256: sum, Lines: lines}
	skippedTools, tooShort := 0, 0
	for _, rs := range raw {
		ss, tools := sessionFromFile(g, rs, d)
		skippedTools += tools
		switch {
		case len(ss.Turns) == 0:
			continue
		case ss.SystemTokens+ss.Turns[0].UserTokens < d.MinInputTokens:
			tooShort++
			continue
		}
		src.Sessions = append(src.Sessions, ss)
	}
	src.LinesUsed = len(src.Sessions)
	if skippedTools > 0 && d.History != "recorded" {
		src.Warnings = append(src.Warnings, fmt.Sprintf("%d tool calls and tool results are in the file: with history: live they are not sent (the server's live answers are); history: recorded replays them verbatim", skippedTools))
	}
	if tooShort > 0 {
		src.Warnings = append(src.Warnings, fmt.Sprintf("%d conversations start under min_input_tokens %d and are left out", tooShort, d.MinInputTokens))
	}
	if len(src.Sessions) == 0 {
		return nil, fmt.Errorf("%s: none of its %d lines gives a request within the filters; accepted: %s data with at least one user message", path, lines, d.Format)
	}
	if d.Order == "shuffle" {
		r := s.rng(streamSource, 0)
		r.Shuffle(len(src.Sessions), func(i, j int) { src.Sessions[i], src.Sessions[j] = src.Sessions[j], src.Sessions[i] })
	}
	return src, nil
}

// streamSource is the RNG stream of a source's shuffle (apart from the synthetic streams).
const streamSource uint64 = 0x736f75726365

// sessionFromFile turns one conversation of a file into the requests plload sends: the system
// messages before the first user message become its system prompt, each user message a turn (its
// recorded answer kept for history: recorded), up to max_turns and to the first request whose prompt
// — system, every earlier message and this one, with the recorded answers standing in for the live
// ones — passes max_input_tokens. It also returns how many tool messages it left out.
func sessionFromFile(g *TextGen, rs rawSession, d *DatasetSpec) (SourceSession, int) {
	ss := SourceSession{ID: rs.id}
	var system []string
	prompt, tools := 0, 0
turns:
	for _, t := range rs.turns {
		switch t.role {
		case "system", "developer":
			if len(ss.Turns) == 0 {
				system = append(system, t.text)
			}
		case "assistant", "tool":
			n := len(ss.Turns)
			if n == 0 {
				continue
			}
			last := &ss.Turns[n-1]
			if last.Recorded == nil {
				last.Recorded = &Recording{}
			}
			rec := last.Recorded
			tokens := g.Count(t.text)
			if t.toolish {
				tools++
			}
			// Everything between a user message and the next is the turn's recorded answer: plain text,
			// or an agent's tool calls and their results, kept verbatim for history: recorded.
			if t.message != nil { // openai keeps whole messages; sharegpt's answers are text only
				rec.Messages = append(rec.Messages, t.message)
			}
			if t.role == "assistant" && rec.Text == "" {
				rec.Text = t.text
			}
			rec.Tokens += tokens
			prompt += tokens
		case "user":
			if len(ss.Turns) == 0 && len(system) > 0 && ss.System == "" {
				ss.System = strings.Join(system, "\n")
				ss.SystemTokens = g.Count(ss.System)
				prompt = ss.SystemTokens
			}
			if strings.TrimSpace(t.text) == "" && len(t.images) == 0 {
				continue // an image alone is a turn: the images go without a text part
			}
			n := g.Count(t.text)
			if d.MaxInputTokens > 0 && prompt+n > d.MaxInputTokens {
				break turns
			}
			ss.Turns = append(ss.Turns, SourceTurn{User: t.text, UserTokens: n, OutputTokens: t.outputTokens, AtMs: t.atMs,
				DelayMs: t.delayMs, Line: rs.line, Images: t.images})
			prompt += n
			if d.MaxTurns > 0 && len(ss.Turns) == d.MaxTurns {
				break turns
			}
		}
	}
	return ss, tools
}
