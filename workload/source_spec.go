package workload

// DataSource is the scenario's `workload:` block (docs/data.md): a dataset of real text or a trace of
// lengths and times, read once at load time and checked line by line.
type DataSource struct {
	Dataset *DatasetSpec `yaml:"dataset,omitempty"`
	Trace   *TraceSpec   `yaml:"trace,omitempty"`
	// Nonce puts a short unique string at the start of every request (NonceStart), or right after
	// its system prompt (NonceAfterSystem), so prefix-cache hits the workload does not mean to have
	// cannot flatter the numbers. It applies to synthetic workloads too.
	Nonce Nonce `yaml:"nonce,omitempty"`
}

// Nonce is where a request's nonce goes: "" (none), NonceStart or NonceAfterSystem.
type Nonce string

// Nonce places (the YAML says true, false or after_system).
const (
	NonceStart       Nonce = "start"
	NonceAfterSystem Nonce = "after_system"
)

// MarshalYAML writes true, false or after_system, as a scenario says it.
func (n Nonce) MarshalYAML() (any, error) {
	switch n {
	case NonceStart:
		return true, nil
	case NonceAfterSystem:
		return string(n), nil
	}
	return false, nil
}

// NonceAt is where the scenario's requests carry a nonce ("": none).
func (s *Scenario) NonceAt() Nonce {
	if s.Workload == nil {
		return ""
	}
	return s.Workload.Nonce
}

// DatasetSpec is `workload.dataset`: prompts or conversations with their text.
type DatasetSpec struct {
	File   string `yaml:"file"`
	Format string `yaml:"format"` // prompts, openai, sharegpt, aiperf, visionarena
	Order  string `yaml:"order"`  // sequential (default) or shuffle (seeded)
	// MaxTurns cuts longer conversations (0: keep every turn).
	MaxTurns int `yaml:"max_turns,omitempty"`
	// MinInputTokens and MaxInputTokens keep the requests whose prompt (system + history + user
	// message, as sent) lies within them; a conversation is cut before its first request past the
	// max (0: no bound).
	MinInputTokens int `yaml:"min_input_tokens,omitempty"`
	MaxInputTokens int `yaml:"max_input_tokens,omitempty"`
	// OutputTokens is each request's max output tokens: from_file (the file's value, else 256), a
	// fixed number or a distribution.
	OutputTokens OutputTokens `yaml:"output_tokens,omitempty"`
	// History is live (the server's answers, default) or recorded (the file's own assistant turns).
	History string `yaml:"history"`
	// MaxImageBytes is the most bytes one image of the file may take, encoded (0: the default,
	// DefaultImageMaxBytes, 20 MB: the servers' usual limit).
	MaxImageBytes int `yaml:"max_image_bytes,omitempty"`
}

// ImageLimit is the most bytes one image of the dataset may take: max_image_bytes, or the default.
func (d *DatasetSpec) ImageLimit() int {
	if d.MaxImageBytes > 0 {
		return d.MaxImageBytes
	}
	return DefaultImageMaxBytes
}

// TraceSpec is `workload.trace`: per-request lengths (and times) without text.
type TraceSpec struct {
	File   string `yaml:"file"`
	Format string `yaml:"format"` // mooncake, azure, burstgpt, qwen_bailian
	// BlockTokens is the size of one hash id's block (mooncake 512, qwen_bailian 16).
	BlockTokens int `yaml:"block_tokens,omitempty"`
	// Start, Duration and MaxRequests slice the trace (by its own clock).
	Start       Duration `yaml:"start,omitempty"`
	Duration    Duration `yaml:"duration,omitempty"`
	MaxRequests int      `yaml:"max_requests,omitempty"`
	// Filter keeps burstgpt rows by model and log type.
	Filter map[string]string `yaml:"filter,omitempty"`
}

// OutputTokens is from_file, a number or a distribution.
type OutputTokens struct {
	FromFile bool
	Dist     *Dist
}

// DefaultDatasetOutputTokens is the max output tokens of a request whose file gives none.
const DefaultDatasetOutputTokens = 256

// MarshalYAML writes from_file, or the distribution.
func (o OutputTokens) MarshalYAML() (any, error) {
	if o.Dist != nil {
		return o.Dist, nil
	}
	return "from_file", nil
}

// Source returns the dataset or trace the scenario read (nil: synthetic).
func (s *Scenario) Source() *Source { return s.source }
