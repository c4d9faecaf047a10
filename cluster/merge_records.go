package cluster

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
)

// globalOrdinal is the trailing number of a conversation id (`s01-000015` → 15): the session's
// ordinal over the whole run, which every shard keeps (SPEC §15). -1 when the id has none.
func globalOrdinal(id string) int64 {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	if i == len(id) {
		return -1
	}
	n, err := strconv.ParseInt(id[i:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// shiftRecord moves a record's epoch times by off ns (local → coordinator time). A zero credit time
// (an AIPerf file has none) stays zero: readers take it as absent.
func shiftRecord(r *metrics.Record, off int64) {
	if r.CreditIssuedNs != 0 {
		r.CreditIssuedNs += off
	}
	r.RequestStartNs += off
	for _, o := range []*metrics.Opt[int64]{&r.RequestAckNs, &r.RequestEndNs, &r.CancellationTimeNs, &r.IntendedStartNs} {
		if o.OK {
			o.V += off
		}
	}
}

// mergedRecord is one record of the merged stage: its place in the global order and its line.
type mergedRecord struct {
	intended, ordinal int64
	turn              int
	start             int64
	rec               *metrics.Record // session_num is rewritten when written
}

// recordTally is what the engine's own counts would have said of the merged records.
type recordTally struct {
	records, ok, errors int
	// orphanRecords and orphanSessions are those of shards that left no stage.json to count them.
	orphanRecords, orphanSessions int
	// firstIssue is the earliest issue time over every shard's records, in coordinator time: a
	// closed-loop stage's t0 (SPEC §7, §15), which the barrier's instant is not.
	firstIssue metrics.Opt[int64]
}

// readShardRecords reads one shard's records of a stage and shifts them by off. A stage the shard
// did not finish (truncatedOK) may end in a half-written line, which is dropped; anywhere else a bad
// line is an error naming path:line. A record of a session outside the shard's share (ordinal ≢
// index mod count) is refused: two shards would then have run the same session.
func readShardRecords(path string, sh report.ShardInfo, off int64, truncatedOK bool, out []mergedRecord) ([]mergedRecord, int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, 0, nil // record_requests: false, or a shard stopped before its first record
	}
	if err != nil {
		return out, 0, inputErr("%s: %v", path, err)
	}
	dropped := 0
	if truncatedOK && len(data) > 0 && data[len(data)-1] != '\n' {
		data, dropped = data[:bytes.LastIndexByte(data, '\n')+1], 1
	}
	line := 0
	err = metrics.ReadRecords(bytes.NewReader(data), func(r *metrics.Record) error {
		line++
		ord := globalOrdinal(r.ConversationID)
		if ord >= 0 && ord%int64(sh.Count) != int64(sh.Index) {
			return &MergeInputError{Err: fmt.Errorf("%s: record %d: conversation %s (ordinal %d) is not shard %d/%d's (its ordinals are ≡ %d mod %d); accepted: each shard's own records", path, line, r.ConversationID, ord, sh.Index, sh.Count, sh.Index, sh.Count)}
		}
		shiftRecord(r, off)
		intended := r.RequestStartNs
		if r.CreditIssuedNs != 0 {
			intended = r.CreditIssuedNs
		}
		if r.IntendedStartNs.OK {
			intended = r.IntendedStartNs.V
		}
		out = append(out, mergedRecord{intended: intended, ordinal: ord, turn: r.TurnIndex, start: r.RequestStartNs, rec: r})
		return nil
	})
	var bad *MergeInputError
	if errors.As(err, &bad) {
		return out, 0, err
	}
	if err != nil {
		// ReadRecords says "line N: why"; the user needs the file too.
		return out, 0, inputErr("%s:%s; accepted: profile_export.jsonl as plload writes it (RECORDS.md)", path, strings.TrimPrefix(err.Error(), "line "))
	}
	return out, dropped, nil
}

// sortGlobal puts records in the order one process would have scheduled them: intended start, then
// the global session ordinal, then the turn (then the send, for tool rounds of one turn).
func sortGlobal(recs []mergedRecord) {
	slices.SortStableFunc(recs, func(a, b mergedRecord) int {
		return cmp.Or(cmp.Compare(a.intended, b.intended), cmp.Compare(a.ordinal, b.ordinal), cmp.Compare(a.turn, b.turn), cmp.Compare(a.start, b.start))
	})
}

// writeRecords writes the merged records in global order, numbering session_num afresh (each shard
// numbered its own requests from 0; one process numbers the stage's), and tallies them.
func writeRecords(path string, recs []mergedRecord) (recordTally, error) {
	var t recordTally
	f, err := os.Create(path)
	if err != nil {
		return t, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	var first metrics.T0Finder
	for i := range recs {
		r := recs[i].rec
		first.Add(r)
		r.SessionNum = i
		buf = append(r.AppendJSON(buf[:0]), '\n')
		w.Write(buf)
		t.records++
		switch { // as the engine counts: a cancelled request is neither
		case r.WasCancelled:
		case r.Error != nil:
			t.errors++
		default:
			t.ok++
		}
		recs[i].rec = nil // the line is written; let the record go
	}
	t.firstIssue = first.T0()
	if err := w.Flush(); err != nil {
		f.Close()
		return t, fmt.Errorf("writing %s: %w", path, err)
	}
	return t, f.Close()
}

// mergedSession is one session line of the merged sessions.jsonl with its global order.
type mergedSession struct {
	scheduled, ordinal int64
	line               []byte
}

// readShardSessions reads one shard's sessions.jsonl of a stage, shifted by off.
func readShardSessions(path string, off int64, truncatedOK bool, out []mergedSession) ([]mergedSession, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, inputErr("%s: %v", path, err)
	}
	if truncatedOK && len(data) > 0 && data[len(data)-1] != '\n' {
		data = data[:bytes.LastIndexByte(data, '\n')+1]
	}
	for n, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var s metrics.SessionRecord
		if err := json.Unmarshal(line, &s); err != nil {
			return out, inputErr("%s:%d: not a session line: %v; accepted: sessions.jsonl as plload run writes it", path, n+1, err)
		}
		s.ScheduledNs += off
		if s.StartNs != 0 {
			s.StartNs += off
		}
		if s.EndNs != 0 {
			s.EndNs += off
		}
		out = append(out, mergedSession{scheduled: s.ScheduledNs, ordinal: globalOrdinal(s.ConversationID), line: s.AppendJSON(nil)})
	}
	return out, nil
}

// writeSessions writes the merged sessions in global order (scheduled time, then ordinal).
func writeSessions(path string, ss []mergedSession) error {
	slices.SortStableFunc(ss, func(a, b mergedSession) int {
		return cmp.Or(cmp.Compare(a.scheduled, b.scheduled), cmp.Compare(a.ordinal, b.ordinal))
	})
	var b bytes.Buffer
	for _, s := range ss {
		b.Write(s.line)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// sameDataset checks that every shard built the same dataset for a stage (each builds it from the
// seed) and returns its bytes from the first.
func sameDataset(dirs []string) ([]byte, error) {
	var first []byte
	var firstPath string
	for _, d := range dirs {
		path := filepath.Join(d, "dataset.jsonl")
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, inputErr("%s: %v", path, err)
		}
		if first == nil {
			first, firstPath = data, path
			continue
		}
		if !bytes.Equal(data, first) {
			return nil, inputErr("%s differs from %s: the shards built different datasets (sha256 %s vs %s); accepted: the shards of one run", path, firstPath, sha256Hex(data)[:12], sha256Hex(first)[:12])
		}
	}
	return first, nil
}
