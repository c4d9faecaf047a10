package workload

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Hash-id block sizes when workload.trace.block_tokens is not given: Mooncake's published traces
// hash 512-token blocks, the Qwen/Bailian traces 16-token ones.
const (
	DefaultMooncakeBlockTokens = 512
	DefaultQwenBlockTokens     = 16
)

// traceRow is one request as the trace file gives it. Its hash ids live in traceFile.ids (one
// slab for the whole file: a million small slices would cost a million allocations).
type traceRow struct {
	ms          float64 // the request's time on the trace's own clock, in ms
	in, out     int     // input and output lengths in tokens
	line        int     // file line (CSV: the row's first line), 1-based
	idsAt, idsN int     // its hash ids: ids[idsAt : idsAt+idsN]
	chat        int64   // qwen_bailian: chat_id and parent_chat_id
	parent      int64
}

// traceFile is what a format's reader hands to readTrace: rows in file order, every field checked.
type traceFile struct {
	path  string
	rows  []traceRow
	ids   []int64
	lines int // data lines or rows read (blank lines and the CSV header not counted)
	// inName and outName are the file's own names for the lengths, for warnings.
	inName, outName string
	warnings        []string
	// dropped holds the chat ids of qwen_bailian rows left out for a length of 0 (nil for other
	// formats), so their later turns go with them.
	dropped map[int64]bool
	nonText int // qwen_bailian rows whose type is not text
}

// readTrace reads workload.trace's file (path is spec.File resolved) into a Source: every request
// with its exact lengths, its time in AtMs (ms from the start of the slice, so a replay of a slice
// starts at once), and text built from its hash-id blocks (docs/data.md). Bad rows are errors naming the
// file, line and column or key; unsorted times are sorted with a warning; rows that cannot be sent
// (a length of 0) are left out with a counted warning.
func (s *Scenario) readTrace(path string, spec *TraceSpec) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the trace: %v", err)
	}
	defer f.Close()
	// The sha256 is taken on the way through, so a large trace is read once and never held whole.
	sum := sha256.New()
	in := bufio.NewReaderSize(io.TeeReader(f, sum), 1<<20)
	tf := &traceFile{path: path, inName: "input_length", outName: "output_length"}
	blockTokens := spec.BlockTokens
	switch spec.Format {
	case FormatMooncake:
		err = readMooncake(tf, in)
		if blockTokens == 0 {
			blockTokens = DefaultMooncakeBlockTokens
		}
	case FormatQwenBailian:
		err = readQwen(tf, in)
		if blockTokens == 0 {
			blockTokens = DefaultQwenBlockTokens
		}
	case FormatAzure:
		err = readAzure(tf, in)
	case FormatBurstGPT:
		err = readBurstGPT(tf, in, spec.Filter)
	default:
		err = fmt.Errorf("trace format %q; accepted: %s, %s, %s, %s", spec.Format,
			FormatMooncake, FormatAzure, FormatBurstGPT, FormatQwenBailian)
	}
	if err != nil {
		return nil, err
	}
	if blockTokens < 1 {
		blockTokens = 1 // only formats without hash ids get here; validation refuses a negative value
	}
	if _, err := io.Copy(io.Discard, in); err != nil { // a reader that stopped early still hashes all
		return nil, fmt.Errorf("cannot read the trace: %v", err)
	}
	src := &Source{File: spec.File, Path: path, Format: spec.Format, SHA256: hex.EncodeToString(sum.Sum(nil)),
		Lines: tf.lines, Warnings: tf.warnings}
	tf.dropZero(src)
	if len(tf.rows) == 0 {
		return nil, fmt.Errorf("%s: none of its %d rows gives a request; accepted: %s rows with %s and %s ≥ 1",
			path, tf.lines, spec.Format, tf.inName, tf.outName)
	}
	tf.sortByTime(src)

	g, err := s.newTextGen()
	if err != nil {
		return nil, err
	}
	tt, err := newTraceText(g)
	if err != nil {
		return nil, err
	}
	tp := newTracePrompts(s, tt, blockTokens)
	w := traceWindow(tf.rows[0].ms, spec)
	if spec.Format == FormatQwenBailian {
		if err := qwenSessions(tf, src, tp, w); err != nil {
			return nil, err
		}
	} else {
		singleSessions(tf, src, tp, w)
	}
	if len(src.Sessions) == 0 {
		return nil, fmt.Errorf("%s: no request left in the slice start %s, duration %s, max_requests %d (the trace spans %s from its first request); accepted: a slice that holds at least one request",
			path, spec.Start, spec.Duration, spec.MaxRequests,
			time.Duration((tf.rows[len(tf.rows)-1].ms-tf.rows[0].ms)*float64(time.Millisecond)).Round(time.Millisecond))
	}
	for _, ss := range src.Sessions {
		src.LinesUsed += len(ss.Turns)
	}
	return src, nil
}

// sortByTime orders the rows by time (stable: equal times keep the file's order) and says so when
// the file was out of order, since a replay follows the times, not the lines.
func (tf *traceFile) sortByTime(src *Source) {
	late, first := 0, 0
	for i := 1; i < len(tf.rows); i++ {
		if tf.rows[i].ms < tf.rows[i-1].ms {
			if late == 0 {
				first = tf.rows[i].line
			}
			late++
		}
	}
	if late == 0 {
		return
	}
	slices.SortStableFunc(tf.rows, func(a, b traceRow) int {
		switch {
		case a.ms < b.ms:
			return -1
		case a.ms > b.ms:
			return 1
		}
		return 0
	})
	src.Warnings = append(src.Warnings, fmt.Sprintf("%s: timestamps are not in order (%d rows are earlier than the row before them, the first at line %d): sorted by time",
		tf.path, late, first))
}

// sliceWindow is the part of the trace a scenario takes: [from, to) on the trace's clock in ms, at
// most max requests (0: no bound).
type sliceWindow struct {
	from, to float64
	max      int
}

func traceWindow(t0 float64, spec *TraceSpec) sliceWindow {
	w := sliceWindow{from: t0 + float64(spec.Start.D())/float64(time.Millisecond), to: math.Inf(1), max: spec.MaxRequests}
	if spec.Duration > 0 {
		w.to = w.from + float64(spec.Duration.D())/float64(time.Millisecond)
	}
	return w
}

func (w sliceWindow) holds(ms float64) bool { return ms >= w.from && ms < w.to }

// dropZero leaves out the rows that cannot be sent — a prompt of 0 tokens, or an answer of 0 tokens
// (BurstGPT's failed requests) — and counts them in a warning.
func (tf *traceFile) dropZero(src *Source) {
	zeroIn, zeroOut := 0, 0
	kept := tf.rows[:0]
	for _, r := range tf.rows {
		switch {
		case r.in == 0:
			zeroIn++
		case r.out == 0:
			zeroOut++
		default:
			kept = append(kept, r)
			continue
		}
		if tf.dropped != nil {
			tf.dropped[r.chat] = true
		}
	}
	tf.rows = kept
	if zeroIn > 0 {
		src.Warnings = append(src.Warnings, fmt.Sprintf("%s: %d rows with %s 0 are left out (a request needs a prompt)", tf.path, zeroIn, tf.inName))
	}
	if zeroOut > 0 {
		src.Warnings = append(src.Warnings, fmt.Sprintf("%s: %d rows with %s 0 are left out (failed requests: none asks for 0 tokens)", tf.path, zeroOut, tf.outName))
	}
}

// singleSessions makes one session of one turn per request in the slice.
func singleSessions(tf *traceFile, src *Source, tp *tracePrompts, w sliceWindow) {
	var picked []*traceRow
	for i := range tf.rows {
		r := &tf.rows[i]
		if r.ms >= w.to || w.max > 0 && len(picked) == w.max {
			break
		}
		if w.holds(r.ms) {
			picked = append(picked, r)
		}
	}
	turns := make([]SourceTurn, len(picked))
	pending := make([]tracePending, len(picked))
	src.Sessions = make([]SourceSession, len(picked))
	for i, r := range picked {
		turns[i] = SourceTurn{UserTokens: r.in, OutputTokens: r.out, ExactOutput: true, AtMs: r.ms - w.from, DelayMs: -1, Line: r.line}
		src.Sessions[i] = SourceSession{ID: "line-" + strconv.Itoa(r.line), Turns: turns[i : i+1 : i+1]}
		pending[i] = tracePending{sess: i, idsAt: r.idsAt, idsN: r.idsN, n: r.in, line: r.line}
	}
	tp.fill(tf, src, pending)
}

// tracePending is a request whose text is still to be written: Sessions[sess].Turns[turn].User.
type tracePending struct {
	sess, turn  int
	idsAt, idsN int
	n, line     int
}

// tracePrompts writes request text: one block of text per distinct hash id, drawn from the seed
// and the id alone, so equal ids are equal text in every request, every run, every machine.
type tracePrompts struct {
	s           *Scenario
	text        *traceText
	blockTokens int
	// blocks holds the blocks more than one request uses, written once before the requests; a block
	// used by one request only is written straight into it, so memory holds the prompts and little
	// besides.
	blocks map[int64]string
}

func newTracePrompts(s *Scenario, text *traceText, blockTokens int) *tracePrompts {
	return &tracePrompts{s: s, text: text, blockTokens: blockTokens, blocks: map[int64]string{}}
}

// used is the part of ids a request of n tokens reads: its blocks up to the one that reaches n.
func (tp *tracePrompts) used(ids []int64, n int) []int64 {
	return ids[:min(len(ids), (n+tp.blockTokens-1)/tp.blockTokens)]
}

// fill writes the text of every pending request into src: first the shared blocks, then the
// requests on every core (each text depends only on the seed, its ids and its line, never on the
// order, so the result is the same on any number of cores).
func (tp *tracePrompts) fill(tf *traceFile, src *Source, pending []tracePending) {
	uses := map[int64]int32{}
	for _, p := range pending {
		for _, id := range tp.used(tf.ids[p.idsAt:p.idsAt+p.idsN], p.n) {
			uses[id]++
		}
	}
	tp.reuse(tf, src, pending, uses)
	w := tp.writer()
	for id, u := range uses {
		if u > 1 {
			tp.blocks[id] = string(tp.text.appendText(nil, w.rng(streamTraceBlock, uint64(id)), tp.blockTokens))
		}
	}
	clear(uses)
	workers := max(1, min(runtime.GOMAXPROCS(0), len(pending)/1024))
	per := (len(pending) + workers - 1) / workers
	var wg sync.WaitGroup
	for from := 0; from < len(pending); from += per {
		part := pending[from:min(from+per, len(pending))]
		wg.Go(func() {
			w := tp.writer()
			for _, p := range part { // each goroutine writes turns of its own; blocks is only read
				src.Sessions[p.sess].Turns[p.turn].User = w.prompt(tf.ids[p.idsAt:p.idsAt+p.idsN], p.n, p.line)
			}
		})
	}
	wg.Wait()
}

// reuse sets each pending request's Blocks and ReusedBlocks: its used blocks, and those an earlier
// request (in the trace's time, then line order) used too. It walks uses, the count of requests
// reading each block, and marks a block seen by negating its count, so it needs no second map of a
// million-row trace's ids; the counts are whole again when it returns.
func (tp *tracePrompts) reuse(tf *traceFile, src *Source, pending []tracePending, uses map[int64]int32) {
	order := make([]int, len(pending))
	for i := range order {
		order[i] = i
	}
	at := func(p tracePending) float64 { return src.Sessions[p.sess].Turns[p.turn].AtMs }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(at(pending[a]), at(pending[b])) })
	for _, k := range order {
		p := pending[k]
		t := &src.Sessions[p.sess].Turns[p.turn]
		used := tp.used(tf.ids[p.idsAt:p.idsAt+p.idsN], p.n)
		t.Blocks = int32(len(used))
		for _, id := range used {
			if u := uses[id]; u < 0 {
				t.ReusedBlocks++
			} else {
				uses[id] = -u
			}
		}
	}
	for id, u := range uses {
		uses[id] = max(u, -u)
	}
}

// traceWriter writes prompts on one goroutine: its own generator and buffer.
type traceWriter struct {
	tp  *tracePrompts
	pcg *rand.PCG // reseeded per block: s.rng's draws without an allocation each
	r   *rand.Rand
	buf []byte
}

func (tp *tracePrompts) writer() *traceWriter {
	pcg := rand.NewPCG(0, 0)
	return &traceWriter{tp: tp, pcg: pcg, r: rand.New(pcg)}
}

// rng is s.rng(stream, index): the same seeding, on one reused generator.
func (w *traceWriter) rng(stream, index uint64) *rand.Rand {
	w.pcg.Seed(w.tp.s.Seed, splitmix(stream<<48^index))
	return w.r
}

// prompt is the text of a request of n tokens: its blocks in order, the last one cut so the total
// is n; when the blocks cover less than n (or there are none), text unique to the line fills the
// rest. The count is exact: every piece is one token (traceText), and a cut block is the first
// pieces of the whole one, so a shorter request still shares the block's prefix.
func (w *traceWriter) prompt(ids []int64, n, line int) string {
	tp := w.tp
	b := w.buf[:0]
	left := n
	for _, id := range tp.used(ids, n) {
		k := min(left, tp.blockTokens)
		left -= k
		if blk, shared := tp.blocks[id]; shared {
			b = append(b, cutPieces(blk, k)...)
		} else { // only this request uses it: only the pieces it needs
			b = tp.text.appendText(b, w.rng(streamTraceBlock, uint64(id)), k)
		}
	}
	if left > 0 {
		b = tp.text.appendText(b, w.rng(streamTraceText, uint64(line)), left)
	}
	w.buf = b
	return string(b[1:]) // without the first piece's space; one allocation of the exact size
}
