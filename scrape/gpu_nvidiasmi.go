package scrape

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
)

// NvidiaSMIQuery is the --query-gpu list ReadNvidiaSMI reads, in its column order: run
//
//	nvidia-smi --query-gpu=<NvidiaSMIQuery> --format=csv,noheader,nounits -lms <interval>
//
// Every name is in `nvidia-smi --help-query-gpu` of old and new drivers (R430 to R590). power.draw
// is not deprecated: on Ampere and newer it is the board's average over the last second, on older
// GPUs an instant reading. Its siblings are not portable: power.draw.average exists only on Ampere
// (except GA100) and newer, power.draw.instant only on recent drivers. clocks.sm is the older
// spelling of clocks.current.sm, which newer drivers accept as an alias.
const NvidiaSMIQuery = "timestamp,index,uuid,name,power.draw,utilization.gpu,memory.used,memory.free,memory.total,temperature.gpu,clocks.sm"

// nvidiaSMIColumns is NvidiaSMIQuery's column count; name (column 3) is the only free text, so a
// line is read from both ends and whatever lies between uuid and power.draw is the name.
const (
	nvidiaSMIColumns = 11
	nvidiaSMIHead    = 3 // timestamp, index, uuid
	nvidiaSMITail    = 7 // power.draw … clocks.sm
	nvidiaSMITime    = "2006/01/02 15:04:05.000"
)

// ReadNvidiaSMI reads the CSV of `nvidia-smi --query-gpu=NvidiaSMIQuery --format=csv,noheader,nounits
// -lms N` until EOF and emits one GPUSample (Source "nvidia-smi") per interval: the lines nvidia-smi
// prints for its GPUs, one each, in index order. A sample's TNs is now() when its last line arrived.
//
// An interval ends where the next one begins — at a line for a GPU the interval already holds —
// rather than where the timestamp column changes: the timestamp is one of the per-GPU query
// fields, and users of multi-GPU logs report rows of one interval milliseconds apart, which would
// make every row a sample of its own; a repeated GPU marks the boundary whichever way a driver
// stamps its rows. So that a sample is not an interval late,
// an interval is also complete, and emitted at once, when it holds as many GPUs as the first one
// did. At EOF a pending interval is emitted and ReadNvidiaSMI returns nil.
//
// "[N/A]", "[Not Supported]" (any bracketed note), "N/A" and empty values are absent, never 0. A
// line that is not the query's CSV is an error naming its number and content; the interval it
// interrupts is not emitted.
func ReadNvidiaSMI(r io.Reader, now func() int64, emit func(metrics.GPUSample)) error {
	scanner := bufio.NewScanner(r)
	var (
		pending   []metrics.GPUReading
		pendingNs int64
		firstSize int
	)
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if firstSize == 0 {
			firstSize = len(pending)
		}
		emit(metrics.GPUSample{TNs: pendingNs, Source: "nvidia-smi", GPUs: pending})
		pending = nil
	}
	for lineNo := 1; scanner.Scan(); lineNo++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		g, err := parseNvidiaSMILine(line)
		if err != nil {
			return fmt.Errorf("nvidia-smi line %d %q: %v; want the %d columns of --query-gpu=%s --format=csv,noheader,nounits",
				lineNo, line, err, nvidiaSMIColumns, NvidiaSMIQuery)
		}
		for _, p := range pending {
			if p.GPU == g.GPU {
				flush() // this GPU again: the next interval has begun
				break
			}
		}
		pending = append(pending, g)
		pendingNs = now()
		if firstSize > 0 && len(pending) >= firstSize {
			flush()
		}
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading nvidia-smi: %w", err)
	}
	flush()
	return nil
}

// parseNvidiaSMILine reads one GPU's line; the error says which column is wrong.
func parseNvidiaSMILine(line string) (metrics.GPUReading, error) {
	cols := strings.Split(line, ",")
	if len(cols) < nvidiaSMIColumns {
		return metrics.GPUReading{}, fmt.Errorf("%d columns", len(cols))
	}
	name := strings.TrimSpace(strings.Join(cols[nvidiaSMIHead:len(cols)-nvidiaSMITail], ","))
	for i := range cols {
		cols[i] = strings.TrimSpace(cols[i])
	}
	head, tail := cols[:nvidiaSMIHead], cols[len(cols)-nvidiaSMITail:]
	if _, err := time.Parse(nvidiaSMITime, head[0]); err != nil {
		return metrics.GPUReading{}, fmt.Errorf("timestamp %q is not YYYY/MM/DD HH:MM:SS.mmm", head[0])
	}
	if n, err := strconv.Atoi(head[1]); err != nil || n < 0 {
		return metrics.GPUReading{}, fmt.Errorf("index %q is not a GPU index", head[1])
	}
	g := metrics.GPUReading{GPU: head[1], UUID: presentText(head[2]), Model: presentText(name)}
	targets := []**float64{&g.PowerW, &g.UtilPct, &g.MemUsedMiB, &g.MemFreeMiB, &g.MemTotalMiB, &g.TempC, &g.SMClockMHz}
	names := strings.Split(NvidiaSMIQuery, ",")[nvidiaSMIColumns-nvidiaSMITail:]
	for i, raw := range tail {
		if presentText(raw) == "" {
			continue
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return metrics.GPUReading{}, fmt.Errorf("%s %q is not a number", names[i], raw)
		}
		*targets[i] = &v
	}
	return g, nil
}

// presentText is a column's value, or "" where nvidia-smi says there is none: N/A, an empty
// column, or a note in brackets ("[N/A]", "[Not Supported]", "[Unknown Error]").
func presentText(s string) string {
	if s == "N/A" || (strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")) {
		return ""
	}
	return s
}
