package metrics

import "encoding/json"

// SessionRecord is one session instance of a stage: when it was scheduled, when it started and ended,
// and how it ended. Records of requests cannot say when a session was open (think time is between
// them), so the engine writes these to stage_NN/sessions.jsonl for active-session and start-lag math.
type SessionRecord struct {
	ConversationID string `json:"conversation_id"`
	XCorrelationID string `json:"x_correlation_id"`
	Persona        int    `json:"persona"`
	// ScheduledNs is the arrival time the schedule gave it (arrival_rate) or the time its slot took
	// it (concurrency).
	ScheduledNs int64 `json:"scheduled_ns"`
	// StartNs is the turn-0 credit issue; absent when the session never started.
	StartNs int64 `json:"start_ns,omitempty"`
	// EndNs is the end of its last request.
	EndNs int64 `json:"end_ns,omitempty"`
	// StartLagMs is StartNs − ScheduledNs.
	StartLagMs   *float64 `json:"start_lag_ms,omitempty"`
	Requests     int      `json:"requests"`
	PlannedTurns int      `json:"planned_turns"`
	// Reused is set when the pool had run dry and this session's dataset entry was used before.
	Reused bool `json:"reused,omitempty"`
	// DatasetSession is the pool entry a reused session replays (its conversation id is its own).
	DatasetSession *int `json:"dataset_session,omitempty"`
	// Outcome is how it ended: completed, error, stage_end, cancelled or never_started.
	Outcome string `json:"outcome"`
}

// Session outcomes.
const (
	SessionCompleted    = "completed"
	SessionError        = "error"
	SessionStageEnd     = "stage_end"
	SessionCancelled    = "cancelled"
	SessionNeverStarted = "never_started"
)

// AppendJSON writes the session as one JSON object.
func (s *SessionRecord) AppendJSON(b []byte) []byte {
	out, err := json.Marshal(s)
	if err != nil {
		return append(b, "{}"...)
	}
	return append(b, out...)
}
