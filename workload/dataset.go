package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"
)

// Turn is one user turn of a session as the dataset fixes it; the assistant's answer comes from the
// server at run time and joins the history then.
type Turn struct {
	// User is the message sent as the user (with its retrieved document first, for RAG).
	User string
	// UserTokens is the length of User in the scenario's tokenizer.
	UserTokens int32
	// MaxOutputTokens is the most tokens this turn asks for.
	MaxOutputTokens int32
	// ThinkBefore is the pause after the previous turn's answer (0 for the first turn), in whole ms.
	ThinkBefore time.Duration
	// AfterPrevious, when > 0, is when the turn is due after the previous turn was due, as a trace
	// with times says (its gaps run from start to start, answers included); the turn still waits for
	// the previous answer. It replaces ThinkBefore.
	AfterPrevious time.Duration
	// ExactOutput asks for exactly MaxOutputTokens (ignore_eos): a trace's lengths are facts.
	ExactOutput bool
	// Extra is what few turns carry (a retrieval request, images), behind one pointer so that the
	// turns of a pool stay 64 bytes each; nil for a plain text turn.
	Extra *TurnExtra
	// Recorded is what a dataset recorded after this turn's user message; nil for synthetic turns.
	// Behind a pointer because a stage's pool holds every turn of every session for the whole run,
	// and most turns record nothing (bench/README.md's third pass: 40 of a turn's 152 bytes).
	Recorded *Recording
}

// Recording is a turn's recorded answer. With history: recorded it joins the history in place of
// the server's.
type Recording struct {
	// Text is the assistant's answer; Tokens all the recorded messages' tokens.
	Text   string
	Tokens int
	// Messages are the file's own messages after the turn's user message (openai: the answer, or an
	// agent's tool calls and tool results), replayed verbatim.
	Messages []json.RawMessage
}

// RecordedText is the recorded answer's text ("" when none).
func (t *Turn) RecordedText() string {
	if t.Recorded == nil {
		return ""
	}
	return t.Recorded.Text
}

// SessionPlan is one conversation of a stage's pool.
type SessionPlan struct {
	ID      string // conversation_id, unique within the run
	Persona int    // index into Workload.Personas; −1: no system prompt (a dataset without one)
	Turns   []Turn
	// At is when a replayed session's first request is due after the stage's origin (the trace's
	// time × time_scale, from the stage's slice of the trace); Timed says it is set (replay only).
	At    time.Duration
	Timed bool
	// planned is the session's number of turns where the pool keeps none (PlannedTurns).
	planned int
}

// StagePool is the fixed set of sessions a stage draws from, and its dataset file.
//
// A synthetic pool keeps no text and no turns: each session's turns are drawn again from its own
// generator, with its text, as the session reaches it (Cursor); the dataset file is written the
// same way (WriteDataset). A stage's pool holds session_pool_factor × the sessions
// running for the whole run, so what it keeps per session is memory every session pays (bench/README.md's third pass:
// 100,000 thinking sessions in 4 GiB). A pool from files keeps its turns and text.
type StagePool struct {
	// text writes released synthetic text again (nil for a pool from files, whose text is kept).
	text *textSource
	// draw draws a synthetic session again, text included, and start begins drawing it turn by
	// turn (both nil for a pool from files). Both take any index: past the pool they draw the
	// stage's later sessions (load.session_reuse: fresh).
	draw  func(g *TextGen, i int) SessionPlan
	start func(i int) (SessionPlan, *sessionDraw)
	// repeats is how many of the pool's last entries repeat a conversation an earlier entry of the
	// run already sent (a file shorter than the sessions its stages take starts over); 0: none.
	repeats int
	// personas are the workload's, for the dataset lines' system prompts.
	personas []Persona
	// Reuse is load.session_reuse: what the stage does once it needs more sessions than the pool.
	Reuse    SessionReuse
	Stage    int // 1-based
	Spec     Stage
	Sessions []SessionPlan
	// DatasetSize is the length of dataset.jsonl (AIPerf's multi_turn layout, the system prompt as
	// the first message) in bytes; WriteDataset writes it.
	DatasetSize int64
	// SHA256 is the hex sha256 of dataset.jsonl: the identity of the stage's workload.
	SHA256 string
	// TraceBlocks and TraceReusedBlocks sum the stage's requests' trace blocks and those an earlier
	// request of the trace read too (SourceTurn's): the trace's own prefix reuse over the stage, to
	// set beside the cache hit the server gave (0 without block ids).
	TraceBlocks, TraceReusedBlocks int64
	// PromptFirst, PromptMid and PromptLast are the mean prompt tokens (system prompt, history at
	// max output, user message) of a session's first, middle and last turn.
	PromptFirst, PromptMid, PromptLast float64
}

// Workload is everything a run sends, fixed before any traffic.
type Workload struct {
	Personas []Persona
	Picker   PersonaPicker
	Stages   []StagePool
	// feat holds the request features (tools, response format, model mix): features.go. A copy of
	// the struct keeps them; a Workload built field by field has none (use WithStages).
	feat *features
}

// RNG streams: each purpose and index gets its own generator, so adding a stage or a persona never
// shifts the draws of another.
const (
	streamPersona uint64 = iota + 1
	streamSession
	streamArrival
)

// rng returns the generator for (stream, index) under the scenario seed.
func (s *Scenario) rng(stream, index uint64) *rand.Rand { return rand.New(s.pcg(stream, index)) }

// pcg is rng's source.
func (s *Scenario) pcg(stream, index uint64) *rand.PCG {
	return rand.NewPCG(s.Seed, splitmix(stream<<48^index))
}

// StageRNG returns the generator the engine uses for a stage's arrival schedule.
func (s *Scenario) StageRNG(stage int) *rand.Rand { return s.rng(streamArrival, uint64(stage)) }

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// PoolSize is the number of sessions a stage's pool holds (docs/scenario.md): `sessions` when given; else
// concurrency × session_pool_factor; for arrival_rate and request_rate, the expected arrivals over
// warmup and duration plus four standard deviations of their count (a gamma process's count varies
// cv² times as much as Poisson's), so a pool runs dry about once in 30,000 stages. A stage that ends
// by count needs at most one session per request: a batch stage's pool is its requests, and an open
// loop stage's is the smaller of its requests and its expected arrivals (requests alone without a
// duration). Each mode sizes its own (LoadMode's poolSize).
func (s *Scenario) PoolSize(st Stage) int {
	if st.Sessions > 0 {
		return st.Sessions
	}
	if m := s.Load.LoadMode(); m.poolSize != nil {
		return m.poolSize(s, st)
	}
	return closedPool(s, st)
}

// Build generates the personas and every stage's session pool and dataset. It must only be called on a
// scenario without errors. Same scenario and seed ⇒ the same bytes on any machine.
func (s *Scenario) Build() (*Workload, error) {
	g, err := s.newTextGen()
	if err != nil {
		return nil, err
	}
	feat, err := s.buildFeatures(g)
	if err != nil {
		return nil, err
	}
	if s.source != nil {
		w, err := s.buildFromSource(g)
		if w != nil {
			w.feat = feat
		}
		return w, err
	}
	w := &Workload{feat: feat}
	if !s.Retrieval() {
		w.Personas = s.buildPersonas(g)
	}
	w.Picker = NewPersonaPicker(len(w.Personas), s.Session.PersonaSelection, s.Session.ZipfS)
	// Stages are independent (each has its own generators), so they are built in parallel, each with a
	// TextGen of its own: its count cache is not safe to share.
	w.Stages = make([]StagePool, len(s.Load.Stages))
	var eg errgroup.Group
	s.warmImageBanks(&eg)
	for i, st := range s.Load.Stages {
		eg.Go(func() error {
			sg, err := s.newTextGen()
			if err != nil {
				return err
			}
			w.Stages[i] = s.buildStage(sg, w, i+1, st)
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return w, nil
}

func (s *Scenario) buildStage(g *TextGen, w *Workload, stage int, st Stage) StagePool {
	pool := StagePool{Stage: stage, Spec: st, Sessions: make([]SessionPlan, s.PoolSize(st)), personas: w.Personas,
		text: newTextSource(s.Session.Language, s.Tokenizer()), Reuse: s.Load.SessionReuse}
	pool.draw = func(g *TextGen, i int) SessionPlan { return s.buildSession(g, w, stage, i) }
	pool.start = func(i int) (SessionPlan, *sessionDraw) {
		sp, d := s.startSession(w, stage, i)
		d.encode = true
		return sp, d
	}
	lines := newDatasetHash()
	for i := range pool.Sessions {
		sp := s.buildSession(g, w, stage, i)
		lines.add(sp, w.Personas)
		pool.addPrompts(sp)
		pool.Sessions[i] = SessionPlan{ID: sp.ID, Persona: sp.Persona, At: sp.At, Timed: sp.Timed, planned: len(sp.Turns)}
	}
	pool.finish(lines)
	return pool
}

// buildSession draws session i of a stage, text included. Every draw comes from the session's own
// generator, of (seed, stage, i), so the same session is drawn again, byte for byte, whenever it is
// asked for (StagePool.Cursor, StagePool.WriteDataset), and an i past the pool is a session as new
// as the pool's own (StagePool.Session).
func (s *Scenario) buildSession(g *TextGen, w *Workload, stage, i int) SessionPlan {
	sp, d := s.startSession(w, stage, i)
	sp.Turns = make([]Turn, 0, sp.planned)
	for t, ok := d.next(g); ok; t, ok = d.next(g) {
		sp.Turns = append(sp.Turns, t)
	}
	sp.planned = 0
	return sp
}

// sessionDraw draws a synthetic session's turns one at a time, in order, from its generator.
type sessionDraw struct {
	s    *Scenario
	r    *rand.Rand
	k, n int
	// encode makes each turn's images (a session being sent, StagePool.Cursor); without it they
	// are their recipes alone (a session drawn for dataset.jsonl).
	encode bool
}

// startSession draws session i's persona and turn count; the turns follow from the returned draw.
func (s *Scenario) startSession(w *Workload, stage, i int) (SessionPlan, *sessionDraw) {
	r := s.rng(streamSession, uint64(stage)<<32|uint64(i))
	sp := SessionPlan{ID: fmt.Sprintf("s%02d-%06d", stage, i), Persona: -1}
	if len(w.Personas) > 0 { // a retrieval stage has none
		sp.Persona = w.Picker.Pick(r)
	}
	sp.planned = s.Session.Turns.SampleInt(r)
	return sp, &sessionDraw{s: s, r: r, n: sp.planned}
}

// next draws the next turn, its user text included; false after the last.
func (d *sessionDraw) next(g *TextGen) (Turn, bool) {
	if d.k >= d.n {
		return Turn{}, false
	}
	ss, r, k := d.s.Session, d.r, d.k
	d.k++
	var t Turn
	if d.s.Retrieval() {
		rt := d.s.drawRetrieval(g, r)
		t.Extra = &TurnExtra{Retrieval: rt}
		t.UserTokens = int32(rt.Tokens())
		return t, true
	}
	if k > 0 {
		t.ThinkBefore = ss.ThinkTime.SampleDuration(r).Round(time.Millisecond)
	}
	t.MaxOutputTokens = int32(ss.MaxOutputTokens.SampleInt(r))
	var doc string
	docTokens := 0
	if ss.RetrievedTokens != nil {
		docTokens = ss.RetrievedTokens.SampleInt(r)
		doc = g.ProseWith(r, docTokens, docOpening(ss.Language, k+1))
	}
	userTokens := ss.UserInputTokens.SampleInt(r)
	question := g.ProseWith(r, userTokens, nil)
	if doc != "" {
		// The question follows the document after a space: both keep their exact token counts.
		question = g.ProseWith(r, userTokens, questionOpening(ss.Language))
		question = " " + question
	}
	t.User = doc + question
	t.UserTokens = int32(docTokens + userTokens)
	if ss.RAG != nil {
		t.Extra = &TurnExtra{Retrieval: d.s.drawRAG(g, r, question, userTokens)}
	}
	if ss.Images != nil {
		// Drawn last, so a scenario without images draws its text as before; UserTokens stays the
		// text's (images are counted apart, Scenario.ImageTokens).
		if ims := d.s.drawImages(r, k, d.encode); ims != nil {
			if t.Extra == nil {
				t.Extra = &TurnExtra{}
			}
			t.Extra.Images = ims
		}
	}
	return t, true
}

func docOpening(lang string, n int) []string {
	if lang == "ko" {
		return []string{"참고", "문서", fmt.Sprint(n), "."}
	}
	return []string{"Reference", "document", fmt.Sprint(n), "."}
}

func questionOpening(lang string) []string {
	if lang == "ko" {
		return []string{"질문", "."}
	}
	return []string{"My", "question", "."}
}

// datasetTurn is one turn of AIPerf's multi_turn custom dataset. delay is the wait before the turn in
// ms; output_length its max output tokens.
type datasetTurn struct {
	Role  string `json:"role"`
	Text  string `json:"text"`
	Delay int64  `json:"delay,omitempty"`
	// Timestamp is a replayed session's first request time from the stage's origin in ms (AIPerf's
	// fixed-schedule field); absent outside replay.
	Timestamp    *int64 `json:"timestamp,omitempty"`
	OutputLength int    `json:"output_length,omitempty"`
	// Texts are a retrieval request's texts (AIPerf's single-turn texts): a rerank's query first.
	Texts []string `json:"texts,omitempty"`
	// Images are the turn's images: a synthetic one as its recipe (the dataset's sha256 covers it
	// without encoding it, and ImageRecipe.Encode makes its file again), one from data as its
	// sha256 (and its url, for an image by URL): datasetImage.
	Images []datasetImage `json:"images,omitempty"`
}

type datasetSession struct {
	SessionID string        `json:"session_id"`
	Turns     []datasetTurn `json:"turns"`
}

func datasetLine(sp SessionPlan, personas []Persona) datasetSession {
	out := datasetSession{SessionID: sp.ID, Turns: make([]datasetTurn, 0, len(sp.Turns)+1)}
	if sp.Persona >= 0 {
		out.Turns = append(out.Turns, datasetTurn{Role: "system", Text: personas[sp.Persona].SystemPrompt})
	}
	for k, t := range sp.Turns {
		dt := datasetTurn{Role: "user", Text: t.User, Delay: max(t.ThinkBefore, t.AfterPrevious).Milliseconds(), OutputLength: int(t.MaxOutputTokens), Texts: datasetTexts(t), Images: datasetImages(t)}
		if k == 0 && sp.Timed {
			ms := sp.At.Milliseconds()
			dt.Timestamp = &ms
		}
		out.Turns = append(out.Turns, dt)
	}
	return out
}
