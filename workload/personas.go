package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
)

// Persona is one shared system prompt. Sessions that pick the same persona share its prompt as a prefix.
type Persona struct {
	Name         string `json:"name"`
	SystemPrompt string `json:"system_prompt"`
	// Tokens is the length of SystemPrompt in the scenario's tokenizer.
	Tokens int `json:"-"`
}

// maxPersonaLine bounds one line of a persona file (a system prompt of about 250k tokens).
const maxPersonaLine = 1 << 20

// readPersonaFile reads JSONL personas, naming the file and line of the first bad one.
func readPersonaFile(path string) ([]Persona, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the persona file: %v", err)
	}
	var out []Persona
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), maxPersonaLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var raw map[string]any
		if err := json.Unmarshal(text, &raw); err != nil {
			return nil, fmt.Errorf("%s line %d: not a JSON object (%v); accepted: {\"name\": \"...\", \"system_prompt\": \"...\"}", path, line, err)
		}
		name, okName := raw["name"].(string)
		prompt, okPrompt := raw["system_prompt"].(string)
		switch {
		case !okName || name == "":
			return nil, fmt.Errorf("%s line %d: \"name\" is missing, empty or not text; accepted: {\"name\": \"...\", \"system_prompt\": \"...\"}", path, line)
		case !okPrompt || prompt == "":
			return nil, fmt.Errorf("%s line %d: \"system_prompt\" is missing, empty or not text; accepted: {\"name\": \"...\", \"system_prompt\": \"...\"}", path, line)
		}
		out = append(out, Persona{Name: name, SystemPrompt: prompt})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s line %d: %v (lines may be at most %d bytes)", path, line+1, err, maxPersonaLine)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no personas; accepted: one {\"name\", \"system_prompt\"} JSON object per line", path)
	}
	return out, nil
}

// buildPersonas returns the scenario's personas: read from its file, or written from the seed.
func (s *Scenario) buildPersonas(g *TextGen) []Persona {
	if s.Personas.Source == "file" {
		out := make([]Persona, len(s.filePersonas))
		for i, p := range s.filePersonas {
			p.Tokens = g.Count(p.SystemPrompt)
			out[i] = p
		}
		return out
	}
	out := make([]Persona, s.Personas.Count)
	for i := range out {
		r := s.rng(streamPersona, uint64(i))
		name := pick(r, g.words["name"])
		role := pick(r, g.words["role"])
		opening := []string{"You", "are", name, ",", "a", pick(r, g.words["adj"]), role, "."}
		if g.lang == "ko" {
			opening = []string{"당신은", name + "입니다", ".", "친절한", role + "로서", "대답합니다", "."}
		}
		n := s.Personas.SystemPromptTokens.SampleInt(r)
		out[i] = Persona{
			Name:         fmt.Sprintf("persona-%03d %s (%s)", i, name, role),
			SystemPrompt: g.ProseWith(r, n, opening),
			Tokens:       n,
		}
	}
	return out
}

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

// PersonaPicker chooses a persona index for each new session.
type PersonaPicker struct {
	cdf []float64 // nil: uniform
	n   int
}

// NewPersonaPicker picks uniformly, or with P(rank k) ∝ 1/k^s for selection "zipf" (rank 1 = persona 0).
// Unlike math/rand's Zipf it accepts any s > 0, as scenario files do.
func NewPersonaPicker(n int, selection string, s float64) PersonaPicker {
	if selection != "zipf" || n <= 1 {
		return PersonaPicker{n: n}
	}
	cdf := make([]float64, n)
	sum := 0.0
	for k := range n {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	return PersonaPicker{cdf: cdf, n: n}
}

// Pick returns a persona index in [0, n).
func (p PersonaPicker) Pick(r *rand.Rand) int {
	if p.cdf == nil {
		return r.IntN(p.n)
	}
	u := r.Float64()
	return min(sort.SearchFloat64s(p.cdf, u), p.n-1)
}

// Probability is the chance of persona k.
func (p PersonaPicker) Probability(k int) float64 {
	if p.cdf == nil {
		return 1 / float64(p.n)
	}
	if k == 0 {
		return p.cdf[0]
	}
	return p.cdf[k] - p.cdf[k-1]
}
