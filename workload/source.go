package workload

// Source is a workload read from a file — a dataset of real text or a trace of lengths and times —
// in place of the synthetic personas and session lengths (docs/data.md). Each format has a reader of its
// own (dataset_*.go, trace_*.go) that fills one of these; Build turns it into stage pools.
type Source struct {
	File   string // as the scenario gave it (relative to the scenario file)
	Path   string // the file actually read
	Format string
	SHA256 string // of the input file
	// Lines counts the file's lines or rows (or, for a JSON array, its items); LinesUsed those that
	// gave a request after the filters.
	Lines, LinesUsed int
	Sessions         []SourceSession
	// Warnings are said at validate and run (a trace sorted by time, lines skipped by a filter).
	Warnings []string
}

// SourceSession is one conversation (a single request is a session of one turn).
type SourceSession struct {
	ID string // from the file when it has one, else derived from the line
	// System is the system prompt ("" when none). Sessions with the same text share one persona, so
	// prefix sharing in the file stays prefix sharing on the server.
	System       string
	SystemTokens int
	Turns        []SourceTurn
}

// SourceTurn is one request of a session.
type SourceTurn struct {
	User       string
	UserTokens int // length of User in the scenario's tokenizer
	// OutputTokens is the output length the file gives (0: none; output_tokens decides).
	OutputTokens int
	// ExactOutput asks the server for exactly OutputTokens (ignore_eos): a trace's output length
	// is a measured fact, not a cap.
	ExactOutput bool
	// AtMs is the request's time from the source's start in ms (−1: the source has no times).
	AtMs float64
	// DelayMs is the file's own pause before this turn in ms (AIPerf's delay; −1: none given).
	DelayMs int64
	// Recorded is what the file recorded between this user message and the next (history: recorded
	// replays it); nil when nothing was. Every session drawn from this turn shares it.
	Recorded *Recording
	// Line is the file line (or CSV row) the turn came from, 1-based, for messages.
	Line int
	// Images are the user message's images (an openai dataset's image_url parts), each the
	// source's one *Image of its content, shared by every turn and session that sends it.
	Images []*Image
	// Blocks are the trace's hash-id blocks the request reads, ReusedBlocks those of them an earlier
	// request of the trace (in time) read too: the prefix reuse the trace itself has (0 for a source
	// without block ids).
	Blocks, ReusedBlocks int32
}
