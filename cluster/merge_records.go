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
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// globalOrdinal is the trailing number of a conversation id (`s01-000015` → 15): the session's
// ordinal over the whole run, which every shard keeps (docs/deployment.md). -1 when the id has none.
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

// recordKey is one record of the merged stage as merge holds it: its place in the global order and
// where its line is (its part's file, offset and length), so a stage of millions of records is
// merged in memory for its keys alone; the lines are read again, in global order, when written.
type recordKey struct {
	intended, ordinal, start int64
	off                      int64 // the line's byte offset in its part's file
	n, turn                  int32 // the line's length (trimmed)
	part                     int32 // index into the stage's parts
}

// recordTally is what the engine's own counts would have said of the merged records.
type recordTally struct {
	records, ok, errors int
	// orphanRecords and orphanSessions are those of shards that left no stage.json to count them.
	orphanRecords, orphanSessions int
	// firstIssue is the earliest issue time over every shard's records, in coordinator time: a
	// closed-loop stage's t0 (docs/measurement.md, docs/deployment.md), which the barrier's instant is not.
	firstIssue metrics.Opt[int64]
}

// add counts one record as the engine counts: a cancelled request is neither ok nor an error.
func (t *recordTally) add(r *metrics.Record) {
	t.records++
	switch {
	case r.WasCancelled:
	case r.Error != nil:
		t.errors++
	default:
		t.ok++
	}
	if issue := issueOf(r); !t.firstIssue.OK || issue < t.firstIssue.V {
		t.firstIssue = metrics.Some(issue)
	}
}

// join adds another part's tally.
func (t *recordTally) join(o recordTally) {
	t.records, t.ok, t.errors = t.records+o.records, t.ok+o.ok, t.errors+o.errors
	if o.firstIssue.OK && (!t.firstIssue.OK || o.firstIssue.V < t.firstIssue.V) {
		t.firstIssue = o.firstIssue
	}
}

// issueOf is a record's issue time as t0 reads it (metrics.T0Finder): the credit, else the send.
func issueOf(r *metrics.Record) int64 {
	if r.CreditIssuedNs != 0 {
		return r.CreditIssuedNs
	}
	return r.RequestStartNs
}

// maxRecordLine is the longest records line merge reads (metrics reads as long).
const maxRecordLine = 64 << 20

// readShardRecords reads one shard's records of a stage (part: its index among the stage's parts),
// shifted by off, and keeps each one's key. A stage the shard did not finish (truncatedOK) may end
// in a half-written line, which is dropped; anywhere else a bad line is an error naming path:line. A
// record of a session outside the shard's share (ordinal ≢ index mod count) is refused: two shards
// would then have run the same session.
func readShardRecords(path string, sh resultfiles.ShardInfo, off int64, truncatedOK bool, part int) ([]recordKey, recordTally, int, error) {
	var t recordTally
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, t, 0, nil // record_requests: false, or a shard stopped before its first record
	}
	if err != nil {
		return nil, t, 0, inputErr("%s: %v", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, t, 0, inputErr("%s: %v", path, err)
	}
	size := info.Size()
	endsInNewline := true
	if size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return nil, t, 0, inputErr("%s: %v", path, err)
		}
		endsInNewline = last[0] == '\n'
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 256<<10), maxRecordLine)
	sc.Split(splitLines)
	var keys []recordKey
	pos, line, n, dropped := int64(0), 0, 0, 0
	for sc.Scan() {
		tok := sc.Bytes()
		start := pos
		pos += int64(len(tok)) + 1
		line++
		if truncatedOK && !endsInNewline && start+int64(len(tok)) == size {
			dropped = 1 // the half-written last line of a shard stopped mid-write
			break
		}
		text := bytes.TrimSpace(tok)
		if len(text) == 0 {
			continue
		}
		lead := bytes.Index(tok, text)
		r, err := metrics.ParseRecord(text)
		if err != nil {
			return nil, t, 0, inputErr("%s:%d: %v; accepted: profile_export.jsonl as plload writes it (docs/records.md)", path, line, err)
		}
		n++
		ord := globalOrdinal(r.ConversationID)
		if ord >= 0 && ord%int64(sh.Count) != int64(sh.Index) {
			return nil, t, 0, inputErr("%s: record %d: conversation %s (ordinal %d) is not shard %d/%d's (its ordinals are ≡ %d mod %d); accepted: each shard's own records", path, n, r.ConversationID, ord, sh.Index, sh.Count, sh.Index, sh.Count)
		}
		shiftRecord(r, off)
		t.add(r)
		intended := issueOf(r)
		if r.IntendedStartNs.OK {
			intended = r.IntendedStartNs.V
		}
		keys = append(keys, recordKey{intended: intended, ordinal: ord, start: r.RequestStartNs, off: start + int64(lead),
			n: int32(len(text)), turn: int32(r.TurnIndex), part: int32(part)})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, t, 0, inputErr("%s:%d: longer than %d bytes; accepted: profile_export.jsonl as plload writes it (docs/records.md)", path, line+1, maxRecordLine)
		}
		return nil, t, 0, inputErr("%s:%d: %v", path, line+1, err)
	}
	return keys, t, dropped, nil
}

// splitLines is bufio.ScanLines without its dropping of a trailing \r: a token's length is its
// line's, so the offsets stay true.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// sortGlobal puts records in the order one process would have scheduled them: intended start, then
// the global session ordinal, then the turn (then the send, for tool rounds of one turn). Stable:
// ties keep the parts' order and each file's.
func sortGlobal(keys []recordKey) {
	slices.SortStableFunc(keys, func(a, b recordKey) int {
		return cmp.Or(cmp.Compare(a.intended, b.intended), cmp.Compare(a.ordinal, b.ordinal), cmp.Compare(a.turn, b.turn), cmp.Compare(a.start, b.start))
	})
}

// writeChunk is how many records one worker re-reads and encodes at a time.
const writeChunk = 4096

// writeRecords writes the merged records in global order — each line read again from its part's file
// at its offset, shifted by the part's offset — numbering session_num afresh (each shard numbered
// its own requests from 0; one process numbers the stage's). Chunks are encoded on every core and
// written in order.
func writeRecords(path string, files []string, offs []int64, keys []recordKey) error {
	srcs := make([]*os.File, len(files))
	for i, p := range files {
		f, err := os.Open(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return inputErr("%s: %v", p, err)
		}
		if f != nil {
			defer f.Close()
		}
		srcs[i] = f
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	workers := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, workers)
	for base := 0; base < len(keys); base += workers * writeChunk {
		var g errgroup.Group
		for k := range workers {
			lo := base + k*writeChunk
			hi := min(lo+writeChunk, len(keys))
			if lo >= hi {
				bufs[k] = bufs[k][:0]
				continue
			}
			g.Go(func() error {
				var err error
				bufs[k], err = encodeChunk(bufs[k][:0], srcs, files, offs, keys[lo:hi], lo)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			out.Close()
			return err
		}
		for _, b := range bufs {
			w.Write(b)
		}
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return out.Close()
}

// encodeChunk re-reads keys' lines and appends them, shifted and renumbered from first, to b.
func encodeChunk(b []byte, srcs []*os.File, files []string, offs []int64, keys []recordKey, first int) ([]byte, error) {
	var line []byte
	for i, k := range keys {
		line = slices.Grow(line[:0], int(k.n))[:k.n]
		if _, err := srcs[k.part].ReadAt(line, k.off); err != nil {
			return b, fmt.Errorf("%s: reading a record again at byte %d: %w (did the file change during the merge?)", files[k.part], k.off, err)
		}
		r, err := metrics.ParseRecord(line)
		if err != nil {
			return b, fmt.Errorf("%s: the record at byte %d no longer parses: %w (did the file change during the merge?)", files[k.part], k.off, err)
		}
		shiftRecord(r, offs[k.part])
		r.SessionNum = first + i
		b = append(r.AppendJSON(b), '\n')
	}
	return b, nil
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
