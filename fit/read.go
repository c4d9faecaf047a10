// Package fit reads a customer's request logs (or a trace, or plload/AIPerf records) and measures what
// a load test must reproduce: arrival rate and burstiness, prompt and answer lengths, session shape and
// prefix sharing (docs/data.md, `plload fit`). It keeps numbers only — never prompt text — so a
// million-line log fits in a few tens of megabytes and nothing a customer wrote can leak into output.
package fit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// Formats plload fit reads.
const (
	FormatRequestLog  = "request_log"  // flat or OpenAI-style request log JSONL
	FormatRecords     = "records"      // plload/AIPerf profile_export.jsonl
	FormatMooncake    = "mooncake"     // {timestamp (ms), input_length, output_length, hash_ids}
	FormatAzure       = "azure"        // TIMESTAMP,ContextTokens,GeneratedTokens
	FormatBurstGPT    = "burstgpt"     // Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
	FormatQwenBailian = "qwen_bailian" // {chat_id, parent_chat_id, timestamp (s), input_length, output_length, hash_ids}
)

// Formats lists the accepted --format values.
var Formats = []string{FormatRequestLog, FormatRecords, FormatMooncake, FormatAzure, FormatBurstGPT, FormatQwenBailian}

// maxLine bounds one log line: an OpenAI-style line carries a whole conversation.
const maxLine = 64 << 20

// noSession marks a request without a session id.
const noSession = -1

// Log is what fit keeps of a log: per request its start time, lengths and session, as numbers.
type Log struct {
	// Formats read, one per file, in order.
	Formats []string
	// Start is each request's start in seconds (any origin; only differences are used).
	Start []float64
	// In and Out are prompt and answer tokens.
	In, Out []int32
	// Session is the session index of each request, or noSession.
	Session []int32
	// Skipped counts rows that carry no lengths (failed requests in records).
	Skipped int
	// Blocks and SeenBlocks count prompt blocks (hash ids) and those seen in an earlier request.
	Blocks, SeenBlocks int64
	// HasBlocks is set when any request carried hash ids.
	HasBlocks bool
	// TextBytes and SharedTextBytes count prompt text (OpenAI-style logs) and the part of it in a
	// prefix an earlier request had: whole messages for messages, 256-byte blocks for a prompt. Only
	// hashes of the text are kept.
	TextBytes, SharedTextBytes int64

	// FirstTurnPrefix is the prefix first turns share with earlier requests (see prefixStats).
	FirstTurnPrefix prefixStats

	// End is each request's answer end in seconds (NaN where unknown) and Turn its user turn in the
	// session (-1 where unknown): records carry both, and with them think time is measured from an
	// answer's end, not from its start. Both stay nil until a request carries one, so a trace of
	// millions of lines pays nothing for them.
	End  []float64
	Turn []int32
	// CachedTokens and CachePromptTokens sum, over the records whose server reported cached prompt
	// tokens (usage prompt_tokens_details.cached_tokens), those and their prompt tokens;
	// CacheRecords counts such records.
	CachedTokens, CachePromptTokens int64
	CacheRecords                    int
	// images counts the requests' images (fit/images.go).
	images imageTally

	textSeen map[uint64]struct{}
	// firstSeen holds the sessions whose first turn prefix sharing has been measured on.
	firstSeen map[int32]struct{}

	sessions map[string]int32
	// sessionFile is the file (1, 2, …) each session came from, and fileEnd each file's last
	// timestamp (a start or an answer end, of any record, failed ones too): where that file's log
	// stops, so a session still going there is told apart (see censored).
	sessionFile []int32
	fileEnd     []float64
	// cancelled holds, per session key, the latest start of a cancelled record (records'
	// was_cancelled): a session whose last request was cancelled was cut off, not finished.
	cancelled map[string]float64
	seen      map[int64]struct{}
	// chats maps a qwen_bailian chat id to its session (the first turn's chat id).
	chats map[int64]int32
	file  int
}

// NewLog returns an empty log.
func NewLog() *Log {
	return &Log{sessions: map[string]int32{}, cancelled: map[string]float64{}, seen: map[int64]struct{}{}, chats: map[int64]int32{}, textSeen: map[uint64]struct{}{},
		firstSeen: map[int32]struct{}{}, FirstTurnPrefix: prefixStats{heads: map[uint64]struct{}{}}}
}

// Sessions is the number of distinct sessions seen.
func (l *Log) Sessions() int { return len(l.sessions) }

func (l *Log) add(t float64, in, out int, session int32) {
	l.Start = append(l.Start, t)
	l.In = append(l.In, int32(min(in, math.MaxInt32)))
	l.Out = append(l.Out, int32(min(out, math.MaxInt32)))
	l.Session = append(l.Session, session)
	l.seenAt(t)
	if l.End != nil {
		l.End = append(l.End, math.NaN())
		l.Turn = append(l.Turn, -1)
	}
}

// timing sets the answer end (seconds) and user turn of the request just added, making room for
// them on first use.
func (l *Log) timing(end float64, turn int32) {
	n := len(l.Start)
	if l.End == nil {
		l.End, l.Turn = make([]float64, n), make([]int32, n)
		for i := range n {
			l.End[i], l.Turn[i] = math.NaN(), -1
		}
	}
	l.End[n-1], l.Turn[n-1] = end, turn
	if !math.IsNaN(end) {
		l.seenAt(end)
	}
}

// seenAt moves the current file's end to t when t is later.
func (l *Log) seenAt(t float64) {
	for len(l.fileEnd) <= l.file {
		l.fileEnd = append(l.fileEnd, math.Inf(-1))
	}
	l.fileEnd[l.file] = math.Max(l.fileEnd[l.file], t)
}

// sessionKey is a session id told apart by its file: ids are per file.
func (l *Log) sessionKey(id string) string { return strconv.Itoa(l.file) + "\x00" + id }

// session returns the index of a session id; ids are per file, so two files never merge sessions.
func (l *Log) session(id string) int32 {
	if id == "" {
		return noSession
	}
	key := l.sessionKey(id)
	if i, ok := l.sessions[key]; ok {
		return i
	}
	i := int32(len(l.sessions))
	l.sessions[key] = i
	l.sessionFile = append(l.sessionFile, int32(l.file))
	return i
}

func (l *Log) blocks(ids []int64) {
	if len(ids) == 0 {
		return
	}
	l.HasBlocks = true
	leading, stillLeading := 0, true
	for _, id := range ids {
		l.Blocks++
		_, ok := l.seen[id]
		if ok {
			l.SeenBlocks++
		} else {
			l.seen[id] = struct{}{}
		}
		if stillLeading = stillLeading && ok; stillLeading {
			leading++
		}
	}
	l.firstTurnPrefix(uint64(ids[0]), float64(leading)/float64(len(ids)))
}

// prefixStats measures the prefix first turns share with an earlier request: the first request of
// each session, or every request of a log without sessions. A first turn has no history of its own,
// so what it shares is a shared system prompt or template — what plload's personas reproduce
// (later turns share their own history, which the scenario's turns reproduce).
type prefixStats struct {
	// Requests are the first turns measured; Tokens their prompt tokens, SharedTokens the part of
	// those in a leading run of blocks (or text pieces) an earlier request had.
	Requests             int
	Tokens, SharedTokens float64
	// heads holds the distinct first blocks (pieces) of first turns that share a prefix.
	heads map[uint64]struct{}
}

// Heads is the number of distinct shared prefixes: first blocks that more than one first turn began with.
func (p prefixStats) Heads() int { return len(p.heads) }

// firstTurnPrefix counts the request just added when it is a first turn: head is its first block's
// (piece's) key, leading the share of its blocks (text) in the leading run seen before.
func (l *Log) firstTurnPrefix(head uint64, leading float64) {
	if sess := l.Session[len(l.Session)-1]; sess != noSession {
		if _, done := l.firstSeen[sess]; done {
			return
		}
		l.firstSeen[sess] = struct{}{}
	}
	p := &l.FirstTurnPrefix
	tokens := float64(l.In[len(l.In)-1])
	p.Requests++
	p.Tokens += tokens
	if leading > 0 {
		p.SharedTokens += leading * tokens
		if head != unknownHead {
			p.heads[head] = struct{}{}
		}
	}
}

// unknownHead is the head of a first turn whose shared prefix cannot be told from others (a record's
// cached tokens without a persona index): it counts towards the shared tokens, not the heads.
const unknownHead = math.MaxUint64

// promptBlock is the piece of a plain prompt string hashed as one unit of prefix sharing.
const promptBlock = 256

// text measures prefix sharing of one request's text: each piece's hash chains the pieces before it,
// so a piece counts as shared only when the whole prefix up to it was seen before.
func (l *Log) text(pieces [][]byte) {
	h := fnv.New64a()
	var sum [8]byte
	var head uint64
	var total, leading int64
	stillLeading := true
	for i, p := range pieces {
		h.Write(p)
		h.Write([]byte{0})
		key := h.Sum64()
		binary.LittleEndian.PutUint64(sum[:], key)
		h.Reset()
		h.Write(sum[:])
		l.TextBytes += int64(len(p))
		total += int64(len(p))
		if i == 0 {
			head = key
		}
		_, ok := l.textSeen[key]
		if ok {
			l.SharedTextBytes += int64(len(p))
		} else {
			l.textSeen[key] = struct{}{}
		}
		if stillLeading = stillLeading && ok; stillLeading {
			leading += int64(len(p))
		}
	}
	if total > 0 {
		l.firstTurnPrefix(head, float64(leading)/float64(total))
	}
}

// requestText splits an OpenAI-style request into the pieces prefix sharing is measured on.
func requestText(r *requestBody) [][]byte {
	var pieces [][]byte
	for _, m := range r.Messages {
		pieces = append(pieces, append(append([]byte(m.Role), 0), m.Content...))
	}
	if len(r.Prompt) > 0 {
		for p := []byte(r.Prompt); len(p) > 0; {
			n := min(len(p), promptBlock)
			pieces = append(pieces, p[:n])
			p = p[n:]
		}
	}
	return pieces
}

// ReadFile reads one log file into l. format "" detects it from the first line; the format read is
// appended to l.Formats.
func (l *Log) ReadFile(path, format string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return l.Read(path, f, format)
}

// Read reads one log from r (name is used in errors).
func (l *Log) Read(name string, r io.Reader, format string) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if format == "" {
		var err error
		if format, err = detect(name, br); err != nil {
			return err
		}
	}
	l.file++
	l.Formats = append(l.Formats, format)
	switch format {
	case FormatAzure, FormatBurstGPT:
		return l.readCSV(name, br, format)
	case FormatRequestLog, FormatRecords, FormatMooncake, FormatQwenBailian:
		return l.readJSONL(name, br, format)
	}
	return fmt.Errorf("%s: unknown format %q; accepted: %s", name, format, strings.Join(Formats, ", "))
}

// detect names the format from the first non-blank line without consuming it.
func detect(name string, br *bufio.Reader) (string, error) {
	for n := 4096; ; n *= 2 {
		head, err := br.Peek(n)
		if len(head) == 0 {
			return "", fmt.Errorf("%s: empty; accepted formats: %s", name, strings.Join(Formats, ", "))
		}
		text := bytes.TrimLeft(head, " \t\r\n\ufeff")
		if len(text) == 0 && err != nil {
			return "", fmt.Errorf("%s: empty (only blank lines); accepted formats: %s", name, strings.Join(Formats, ", "))
		}
		i := bytes.IndexByte(text, '\n')
		if i < 0 && err == nil && n < maxLine {
			continue // the first line is longer than what was peeked
		}
		if i >= 0 {
			text = text[:i]
		}
		return detectLine(name, bytes.TrimSpace(text))
	}
}

func detectLine(name string, line []byte) (string, error) {
	if len(line) > 0 && line[0] == '{' {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(line, &keys); err != nil {
			return "", fmt.Errorf("%s line 1: not a JSON object (%v); accepted formats: %s", name, err, strings.Join(Formats, ", "))
		}
		has := func(k string) bool { _, ok := keys[k]; return ok }
		switch {
		case has("metadata") && has("metrics"):
			return FormatRecords, nil
		case has("chat_id"):
			return FormatQwenBailian, nil
		case has("input_length"):
			return FormatMooncake, nil
		case has("prompt_tokens") || has("usage"):
			return FormatRequestLog, nil
		}
		return "", fmt.Errorf("%s line 1: a JSON object of no known format; accepted: a request log ({timestamp, prompt_tokens, completion_tokens} or {timestamp, request, usage}), records (metadata, metrics), mooncake (input_length, hash_ids), qwen_bailian (chat_id); or say --format", name)
	}
	header := strings.ToLower(string(line))
	switch {
	case strings.HasPrefix(header, "timestamp,contexttokens"):
		return FormatAzure, nil
	case strings.HasPrefix(header, "timestamp,model"):
		return FormatBurstGPT, nil
	}
	return "", fmt.Errorf("%s line 1: neither JSON nor a known CSV header; accepted CSV headers: TIMESTAMP,ContextTokens,GeneratedTokens (azure), Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (burstgpt)", name)
}

// readJSONL reads one JSON object per line; blank lines are skipped.
func (l *Log) readJSONL(name string, br *bufio.Reader, format string) error {
	_, err := workload.EachJSONLine(name, br, maxLine, func(line int, text []byte) error {
		var err error
		switch format {
		case FormatRequestLog:
			err = l.requestLine(text)
		case FormatRecords:
			err = l.recordLine(text)
		case FormatMooncake:
			err = l.mooncakeLine(text)
		case FormatQwenBailian:
			err = l.qwenLine(text)
		}
		if err != nil {
			return fmt.Errorf("%s line %d (%s): %w", name, line, format, err)
		}
		return nil
	})
	return err
}

// requestBody is the part of an OpenAI-style request prefix sharing is measured on; it lives for
// one line, and only hashes of it are kept.
type requestBody struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Prompt json.RawMessage `json:"prompt"`
}

// requestRow is either shape of a request log line.
type requestRow struct {
	Timestamp        json.RawMessage `json:"timestamp"`
	SessionID        json.RawMessage `json:"session_id"`
	PromptTokens     *float64        `json:"prompt_tokens"`
	CompletionTokens *float64        `json:"completion_tokens"`
	Request          *requestBody    `json:"request"`
	Usage            *struct {
		PromptTokens     *float64 `json:"prompt_tokens"`
		CompletionTokens *float64 `json:"completion_tokens"`
	} `json:"usage"`
}

func (l *Log) requestLine(text []byte) error {
	var r requestRow
	if err := json.Unmarshal(text, &r); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	t, err := parseTimestamp(r.Timestamp)
	if err != nil {
		return err
	}
	in, out := r.PromptTokens, r.CompletionTokens
	if r.Usage != nil {
		in, out = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	if in == nil || out == nil {
		return errors.New("no prompt_tokens/completion_tokens (top level, or in usage); accepted: {timestamp, prompt_tokens, completion_tokens} or {timestamp, request, usage: {prompt_tokens, completion_tokens}}")
	}
	ni, err := count("prompt_tokens", *in)
	if err != nil {
		return err
	}
	no, err := count("completion_tokens", *out)
	if err != nil {
		return err
	}
	id, err := sessionID(r.SessionID)
	if err != nil {
		return err
	}
	l.add(t, ni, no, l.session(id))
	if r.Request != nil {
		l.text(requestText(r.Request))
		l.images.request(r.Request)
	}
	return nil
}

// parseTimestamp reads epoch seconds (a number) or an RFC 3339 string.
func parseTimestamp(raw json.RawMessage) (float64, error) {
	const accepted = "accepted: epoch seconds (1764547200.125) or RFC 3339 (\"2025-12-01T00:00:01.480Z\")"
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("timestamp is missing; " + accepted)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("timestamp: %v; %s", err, accepted)
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return float64(t.Unix()) + float64(t.Nanosecond())/1e9, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		return 0, fmt.Errorf("timestamp %q; %s", s, accepted)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("timestamp %s; %s", raw, accepted)
	}
	return f, nil
}

// sessionID reads a session id written as a string or a number.
func sessionID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("session_id: %v", err)
		}
		return s, nil
	case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
		return string(raw), nil
	}
	return "", fmt.Errorf("session_id %s; accepted: a string or a number", raw)
}

// count checks a token count: a whole number ≥ 0.
func count(field string, v float64) (int, error) {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s %g; accepted: a token count ≥ 0", field, v)
	}
	return int(math.Round(v)), nil
}

func (l *Log) recordLine(text []byte) error {
	rec, err := metrics.ParseRecord(text)
	if err != nil {
		return err
	}
	in := rec.InputSequenceLength
	if !in.OK {
		in = rec.ErrorISL
	}
	start := float64(rec.RequestStartNs) / 1e9
	// Every record, failed or not, marks how far the log reaches; a cancelled one (a run's end
	// cancels what is in flight) marks its session as cut off.
	l.seenAt(start)
	if rec.RequestEndNs.OK && rec.RequestEndNs.V >= rec.RequestStartNs {
		l.seenAt(float64(rec.RequestEndNs.V) / 1e9)
	}
	if id := recordSession(rec); rec.WasCancelled && id != "" {
		key := l.sessionKey(id)
		if at, ok := l.cancelled[key]; !ok || start > at {
			l.cancelled[key] = start
		}
	}
	if !in.OK || !rec.OutputSequenceLength.OK {
		l.Skipped++ // a failed request: no answer length to fit
		return nil
	}
	l.add(start, in.V, rec.OutputSequenceLength.V, l.session(recordSession(rec)))
	end := math.NaN()
	if rec.RequestEndNs.OK && rec.RequestEndNs.V >= rec.RequestStartNs {
		end = float64(rec.RequestEndNs.V) / 1e9
	}
	l.timing(end, int32(min(max(rec.TurnIndex, -1), math.MaxInt32)))
	l.recordCache(rec, in.V)
	l.images.record(rec)
	return nil
}

// recordSession is the session a record belongs to: its conversation_id, told apart by
// x_correlation_id, because AIPerf names a dataset conversation in conversation_id (two sessions
// replaying it share the id) and the session instance in x_correlation_id; plload writes one
// correlation id per session, so its sessions are the same either way. A record without a
// conversation_id (AIPerf's single-turn runs) has no session.
func recordSession(rec *metrics.Record) string {
	if rec.ConversationID == "" {
		return ""
	}
	return rec.ConversationID + "\x00" + rec.XCorrelationID
}

// recordCache counts the server's cached prompt tokens of a record that reports them: the prefix
// sharing the server saw. A first turn's (turn 0, not a tool round) counts towards what first turns
// share; plload's persona index tells the shared prefixes apart (AIPerf's records carry none).
func (l *Log) recordCache(rec *metrics.Record, isl int) {
	if !rec.UsageCachedTokens.OK {
		return
	}
	prompt := isl
	if rec.UsagePromptTokens.OK {
		prompt = rec.UsagePromptTokens.V
	}
	cached := min(max(rec.UsageCachedTokens.V, 0), prompt)
	l.CacheRecords++
	l.CachedTokens += int64(cached)
	l.CachePromptTokens += int64(prompt)
	if rec.TurnIndex != 0 || rec.ToolRound.V > 0 || prompt == 0 {
		return
	}
	head := uint64(unknownHead) // no persona: the shared prefixes cannot be told apart
	if rec.Persona.OK {
		head = uint64(rec.Persona.V) + 1
	}
	l.firstTurnPrefix(head, float64(cached)/float64(prompt))
}

type mooncakeRow struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *float64 `json:"input_length"`
	OutputLength *float64 `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

func (r *mooncakeRow) lengths() (int, int, error) {
	if r.Timestamp == nil || r.InputLength == nil || r.OutputLength == nil {
		return 0, 0, errors.New("timestamp, input_length and output_length are required")
	}
	in, err := count("input_length", *r.InputLength)
	if err != nil {
		return 0, 0, err
	}
	out, err := count("output_length", *r.OutputLength)
	return in, out, err
}

func (l *Log) mooncakeLine(text []byte) error {
	var r mooncakeRow
	if err := json.Unmarshal(text, &r); err != nil {
		return fmt.Errorf("not a Mooncake row {timestamp (ms), input_length, output_length, hash_ids}: %v", err)
	}
	in, out, err := r.lengths()
	if err != nil {
		return err
	}
	l.add(*r.Timestamp/1000, in, out, noSession)
	l.blocks(r.HashIDs)
	return nil
}

type qwenRow struct {
	mooncakeRow
	ChatID       *int64 `json:"chat_id"`
	ParentChatID *int64 `json:"parent_chat_id"`
}

func (l *Log) qwenLine(text []byte) error {
	var r qwenRow
	if err := json.Unmarshal(text, &r); err != nil {
		return fmt.Errorf("not a qwen_bailian row {chat_id, parent_chat_id, timestamp (s), input_length, output_length, hash_ids}: %v", err)
	}
	if r.ChatID == nil {
		return errors.New("chat_id is required")
	}
	in, out, err := r.lengths()
	if err != nil {
		return err
	}
	// A later turn joins its parent's session; a parent not seen (the log starts mid-chat) starts one.
	sess, ok := int32(0), false
	if r.ParentChatID != nil && *r.ParentChatID >= 0 {
		sess, ok = l.chats[*r.ParentChatID]
	}
	if !ok {
		sess = l.session("chat " + strconv.FormatInt(*r.ChatID, 10))
	}
	l.chats[*r.ChatID] = sess
	l.add(*r.Timestamp, in, out, sess)
	l.blocks(r.HashIDs)
	return nil
}

// readCSV reads an Azure or BurstGPT trace.
func (l *Log) readCSV(name string, br *bufio.Reader, format string) error {
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s line 1: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	var want []string
	if format == FormatAzure {
		want = []string{"timestamp", "contexttokens", "generatedtokens"}
	} else {
		want = []string{"timestamp", "request tokens", "response tokens"}
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return fmt.Errorf("%s line 1: the header has no column %q (%s)", name, w, format)
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// FieldPos is only valid after a record was read, so a bad row's line comes from the error.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s line %d, column %d (%s): %v", name, pe.Line, pe.Column, format, pe.Err)
			}
			return fmt.Errorf("%s (%s): %v", name, format, err)
		}
		line, _ := cr.FieldPos(0)
		field := func(k string) (string, error) {
			i := col[k]
			if i >= len(rec) {
				return "", fmt.Errorf("%s line %d (%s): %d columns, the header has %d", name, line, format, len(rec), len(header))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		ts, err := field(want[0])
		if err != nil {
			return err
		}
		var t float64
		if format == FormatAzure {
			t, err = azureTime(ts)
		} else {
			t, err = strconv.ParseFloat(ts, 64)
		}
		if err != nil {
			return fmt.Errorf("%s line %d (%s): timestamp %q: not a time", name, line, format, ts)
		}
		var n [2]int
		for j, k := range want[1:] {
			s, err := field(k)
			if err != nil {
				return err
			}
			v, perr := strconv.ParseFloat(s, 64)
			if perr == nil {
				n[j], perr = count(k, v)
			}
			if perr != nil {
				return fmt.Errorf("%s line %d (%s): column %q is %q; accepted: a token count ≥ 0", name, line, format, k, s)
			}
		}
		l.add(t, n[0], n[1], noSession)
	}
}

// azureTimeLayouts: 2023 "2023-11-16 18:15:46.1178430" (UTC), 2024 "2024-05-10 00:00:00.001291+00:00";
// time.Parse accepts any fractional seconds after the seconds field.
var azureTimeLayouts = []string{"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"}

func azureTime(s string) (float64, error) {
	var err error
	for _, layout := range azureTimeLayouts {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return float64(t.Unix()) + float64(t.Nanosecond())/1e9, nil
		}
	}
	return 0, err
}
