package metrics

import "sort"

// TurnNumbers are one turn index's mean TTFT and mean request size over the stage's successful
// in-window requests of that turn (its tool rounds included): side by side they show what a turn
// costs on the wire and what the server made of it — the Responses API's client-held history
// against its server-held one (docs/apis.md).
type TurnNumbers struct {
	Turn     int `json:"turn"`
	Requests int `json:"requests"`
	// TTFTMeanMs is null where none of them streamed a token (a non-streamed stage).
	TTFTMeanMs Opt[float64] `json:"ttft_ms_mean"`
	// RequestBytesMean is null where none of them carried request_bytes (another tool's records).
	RequestBytesMean Opt[float64] `json:"request_bytes_mean"`
}

// turnSums sums one turn index's TTFT and request sizes.
type turnSums struct {
	requests          int
	ttftN, bytesN     int
	ttftSum, bytesSum float64
}

// addTurn takes a successful in-window request into its turn's sums.
func (s *Stage) addTurn(r *Record) {
	if s.turnSums == nil {
		s.turnSums = map[int]*turnSums{}
	}
	ts := s.turnSums[r.TurnIndex]
	if ts == nil {
		ts = &turnSums{}
		s.turnSums[r.TurnIndex] = ts
	}
	ts.requests++
	if r.TTFT.OK {
		ts.ttftN, ts.ttftSum = ts.ttftN+1, ts.ttftSum+r.TTFT.V
	}
	if r.RequestBytes.OK {
		ts.bytesN, ts.bytesSum = ts.bytesN+1, ts.bytesSum+float64(r.RequestBytes.V)
		s.sawRequestBytes = true
	}
}

// byTurn lists the turn indices in order; nil when no request carried request_bytes (records
// written before plload kept it, or by another tool), so their stage.json stays as it was.
func (s *Stage) byTurn() []TurnNumbers {
	if !s.sawRequestBytes {
		return nil
	}
	out := make([]TurnNumbers, 0, len(s.turnSums))
	for turn, ts := range s.turnSums {
		e := TurnNumbers{Turn: turn, Requests: ts.requests}
		if ts.ttftN > 0 {
			e.TTFTMeanMs = Some(ts.ttftSum / float64(ts.ttftN))
		}
		if ts.bytesN > 0 {
			e.RequestBytesMean = Some(ts.bytesSum / float64(ts.bytesN))
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Turn < out[j].Turn })
	return out
}
