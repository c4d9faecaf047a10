package metrics

import "fmt"

// A RAG turn is a pipeline: its steps (embed the question, rerank the candidates), then the chat.
// The steps' records are not chat requests — they have no tokens out and their latency is another
// server's — so they are summed here, apart from the stage's chat numbers, and the turn's whole
// latency (from when it was due — its first step's intended start — to the chat's last token) beside them.

// RAGSummary is a RAG stage's pipeline (stage.json "rag"): each step's requests and latency, and the
// whole turn's latency, over the turns whose chat request started in the window.
type RAGSummary struct {
	Steps []RAGStep `json:"steps"`
	// Turn is the whole turn's latency, question to last token: from when the turn was due (its first step's intended start) to its chat
	// request's end, over the successful chat requests of RAG turns in the window.
	Turn Dist `json:"turn_ms"`
	// TurnTTFT is from when the turn was due to the chat's first token: what the user waits to see.
	TurnTTFT Dist `json:"turn_ttft_ms"`
}

// RAGStep is one step's requests that started in the window.
type RAGStep struct {
	Step      string         `json:"step"`
	Requests  int            `json:"requests"`
	Succeeded int            `json:"succeeded"`
	Errors    int            `json:"errors"`
	Latency   Dist           `json:"latency_ms"`
	ErrorKind map[string]int `json:"error_kinds,omitempty"`
}

// ragTally gathers a stage's RAG records.
type ragTally struct {
	order    []string
	steps    map[string]*ragStepTally
	turn     []float64
	turnTTFT []float64
}

type ragStepTally struct {
	requests, ok, errors int
	latency              []float64
	kinds                map[string]int
}

// addStep counts a step's record that started in the window.
func (t *ragTally) addStep(r *Record) {
	if t.steps == nil {
		t.steps = map[string]*ragStepTally{}
	}
	st := t.steps[r.Step]
	if st == nil {
		st = &ragStepTally{}
		t.steps[r.Step] = st
		t.order = append(t.order, r.Step)
	}
	st.requests++
	switch {
	case r.WasCancelled:
	case r.Error != nil:
		st.errors++
		if st.kinds == nil {
			st.kinds = map[string]int{}
		}
		kind := r.Error.Type
		if r.Error.Code.OK {
			kind = fmt.Sprintf("%d %s", r.Error.Code.V, r.Error.Type)
		}
		st.kinds[kind]++
	default:
		st.ok++
		appendOpt(&st.latency, r.RequestLatency)
	}
}

// addTurn takes a successful RAG turn's chat request: the turn's whole latency and its first token.
func (t *ragTally) addTurn(r *Record) {
	if !r.RAGTurnStartNs.OK || !r.RequestEndNs.OK {
		return
	}
	t.turn = append(t.turn, Ms(r.RequestEndNs.V-r.RAGTurnStartNs.V))
	if r.TTFT.OK {
		t.turnTTFT = append(t.turnTTFT, Ms(r.RequestStartNs-r.RAGTurnStartNs.V)+r.TTFT.V)
	}
}

// result is the summary; nil when the stage had no RAG records.
func (t *ragTally) result() *RAGSummary {
	if len(t.order) == 0 && len(t.turn) == 0 {
		return nil
	}
	out := &RAGSummary{Steps: []RAGStep{}, Turn: summarize(t.turn), TurnTTFT: summarize(t.turnTTFT)}
	for _, name := range t.order {
		st := t.steps[name]
		out.Steps = append(out.Steps, RAGStep{Step: name, Requests: st.requests, Succeeded: st.ok, Errors: st.errors,
			Latency: summarize(st.latency), ErrorKind: st.kinds})
	}
	return out
}
