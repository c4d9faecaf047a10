package scrape

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

// counter is a now() that returns 1, 2, 3, … so a sample's TNs tells which line completed it.
func counter() func() int64 {
	var n int64
	return func() int64 { n++; return n }
}

func readNvidiaSMIAll(t *testing.T, text string) ([]metrics.GPUSample, error) {
	t.Helper()
	var got []metrics.GPUSample
	err := ReadNvidiaSMI(strings.NewReader(text), counter(), func(s metrics.GPUSample) { got = append(got, s) })
	return got, err
}

// TestReadNvidiaSMITwoH100sThreeIntervals: testdata/nvidia_smi_h100x2.csv is three intervals of two
// H100s: both idle, then GPU 0 under load, then both. Three samples of two GPUs each, every value
// where nvidia-smi put it, the model name with its spaces, and each sample stamped when its last
// line came (lines 2, 4 and 6).
func TestReadNvidiaSMITwoH100sThreeIntervals(t *testing.T) {
	text, err := os.ReadFile("testdata/nvidia_smi_h100x2.csv")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readNvidiaSMIAll(t, string(text))
	if err != nil {
		t.Fatal(err)
	}
	reading := func(gpu string, loaded bool) metrics.GPUReading {
		g := metrics.GPUReading{GPU: gpu, UUID: "GPU-00000000-0000-0000-0000-00000000000" + gpu, Model: "NVIDIA H100 80GB HBM3",
			PowerW: ptr(69.85), UtilPct: ptr(0), MemUsedMiB: ptr(0), MemFreeMiB: ptr(81081), MemTotalMiB: ptr(81559), TempC: ptr(41), SMClockMHz: ptr(345)}
		if loaded {
			g.PowerW, g.UtilPct, g.MemUsedMiB, g.MemFreeMiB, g.TempC, g.SMClockMHz = ptr(631.95), ptr(100), ptr(19818), ptr(61263), ptr(59), ptr(1980)
		}
		return g
	}
	want := []metrics.GPUSample{
		{TNs: 2, Source: "nvidia-smi", GPUs: []metrics.GPUReading{reading("0", false), reading("1", false)}},
		{TNs: 4, Source: "nvidia-smi", GPUs: []metrics.GPUReading{reading("0", true), reading("1", false)}},
		{TNs: 6, Source: "nvidia-smi", GPUs: []metrics.GPUReading{reading("0", true), reading("1", true)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("samples (-want +got):\n%s", diff)
	}
}

// TestReadNvidiaSMIEmitsEachIntervalAtOnce feeds the fixture through a pipe, a line at a time, as
// nvidia-smi -lms writes it. The first interval's size is learnt when the second begins; from then
// on a sample is out as soon as its last GPU's line is, before the next interval's lines exist.
func TestReadNvidiaSMIEmitsEachIntervalAtOnce(t *testing.T) {
	text, err := os.ReadFile("testdata/nvidia_smi_h100x2.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(text), "\n") // each with its newline, as nvidia-smi writes it
	pr, pw := io.Pipe()
	samples := make(chan metrics.GPUSample, 10)
	done := make(chan error, 1)
	go func() {
		done <- ReadNvidiaSMI(pr, counter(), func(s metrics.GPUSample) { samples <- s })
		pr.Close()
	}()
	write := func(i int) {
		t.Helper()
		if _, err := io.WriteString(pw, lines[i]); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	expect := func(when string, tNs int64) {
		t.Helper()
		select {
		case s := <-samples:
			if s.TNs != tNs || len(s.GPUs) != 2 {
				t.Fatalf("%s: sample at %d with %d GPUs, want at %d with 2", when, s.TNs, len(s.GPUs), tNs)
			}
		case err := <-done:
			t.Fatalf("%s: reader ended (%v) before emitting", when, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no sample yet", when)
		}
	}
	write(0)
	write(1)
	write(2) // GPU 0 again: the first interval is over
	expect("after the second interval's first line", 2)
	write(3)
	expect("after the second interval's last line, before the third's", 4)
	write(4)
	write(5)
	expect("after the third interval's last line", 6)
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(samples) != 0 {
		t.Fatalf("%d samples after EOF, want none: each was emitted already", len(samples))
	}
}

// TestReadNvidiaSMIRowsStampedApart: the rows of one interval may carry timestamps a few ms apart
// (nvidia-smi reads the GPUs one after another); an interval is still one sample.
func TestReadNvidiaSMIRowsStampedApart(t *testing.T) {
	text := "2026/07/14 08:12:51.012, 0, GPU-a, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, 41, 345\n" +
		"2026/07/14 08:12:51.016, 1, GPU-b, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, 41, 345\n" +
		"2026/07/14 08:12:52.013, 0, GPU-a, NVIDIA H100 80GB HBM3, 631.95, 100, 19818, 61263, 81559, 59, 1980\n" +
		"2026/07/14 08:12:52.018, 1, GPU-b, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, 41, 345\n"
	got, err := readNvidiaSMIAll(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].GPUs) != 2 || len(got[1].GPUs) != 2 || *got[1].GPUs[0].PowerW != 631.95 {
		t.Fatalf("%+v", got)
	}
}

// TestReadNvidiaSMINotAvailableIsAbsent: testdata/nvidia_smi_na_power.csv is a GeForce GTX 1050 Ti,
// which has no power sensor: "[N/A]" leaves the power absent (never 0) and the rest is read. Other
// spellings of "no value" — "[Not Supported]", "N/A", an empty column — are absent too.
func TestReadNvidiaSMINotAvailableIsAbsent(t *testing.T) {
	text, err := os.ReadFile("testdata/nvidia_smi_na_power.csv")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readNvidiaSMIAll(t, string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d samples, want 2 (one GPU, two intervals)", len(got))
	}
	for _, s := range got {
		g := s.GPUs[0]
		if len(s.GPUs) != 1 || g.PowerW != nil || g.Model != "GeForce GTX 1050 Ti" || *g.MemTotalMiB != 4040 || *g.TempC != 54 || *g.UtilPct != 0 {
			t.Fatalf("%s", readingString(g))
		}
	}
	got, err = readNvidiaSMIAll(t, "2026/07/14 09:00:27.792, 0, GPU-m, NVIDIA H100 80GB HBM3, 71.15, [Not Supported], N/A, , 81559, [N/A], 345\n")
	if err != nil {
		t.Fatal(err)
	}
	want := metrics.GPUReading{GPU: "0", UUID: "GPU-m", Model: "NVIDIA H100 80GB HBM3", PowerW: ptr(71.15), MemTotalMiB: ptr(81559), SMClockMHz: ptr(345)}
	if diff := cmp.Diff(want, got[0].GPUs[0]); diff != "" {
		t.Fatalf("reading (-want +got):\n%s", diff)
	}
}

// TestReadNvidiaSMINameWithComma: the name is the one free-text column, read as what lies between
// uuid and power.draw, so a comma in it does not shift the numbers.
func TestReadNvidiaSMINameWithComma(t *testing.T) {
	got, err := readNvidiaSMIAll(t, "2026/07/14 08:12:51.012, 0, GPU-a, Board, Rev 2, 50.00, 1, 2, 3, 5, 40, 300\n")
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0].GPUs[0]; g.Model != "Board, Rev 2" || *g.PowerW != 50 || *g.SMClockMHz != 300 {
		t.Fatalf("%s model %q", readingString(g), g.Model)
	}
}

// TestReadNvidiaSMIMalformedLine: a line that is not the query's CSV stops the reader with an error
// that names the line's number and content and the query it expected; the interval it interrupts
// (GPU 0's line before it) is not emitted as if it were whole.
func TestReadNvidiaSMIMalformedLine(t *testing.T) {
	good0 := "2026/07/14 08:12:51.012, 0, GPU-a, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, 41, 345\n"
	good1 := "2026/07/14 08:12:51.012, 1, GPU-b, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, 41, 345\n"
	cases := map[string]struct{ bad, want string }{
		"units left in": {"2026/07/14 08:12:52.013, 0, GPU-a, NVIDIA H100 80GB HBM3, 631.95 W, 100 %, 19818 MiB, 61263 MiB, 81559 MiB, 59, 1980 MHz",
			`power.draw "631.95 W" is not a number`},
		"a header":             {"timestamp, index, uuid, name, power.draw [W], utilization.gpu [%], memory.used [MiB], memory.free [MiB], memory.total [MiB], temperature.gpu, clocks.current.sm [MHz]", `timestamp "timestamp"`},
		"too few columns":      {"2026/07/14 08:12:52.013, 0, 69.85, 41", "4 columns"},
		"an error message":     {"Failed to initialize NVML: Driver/library version mismatch", "1 columns"},
		"a bad GPU index":      {"2026/07/14 08:12:52.013, GPU0, GPU-a, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, 41, 345", `index "GPU0"`},
		"a number that is not": {"2026/07/14 08:12:52.013, 0, GPU-a, NVIDIA H100 80GB HBM3, 69.85, 0, 0, 81081, 81559, NaN, 345", `temperature.gpu "NaN"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var emitted int
			err := ReadNvidiaSMI(strings.NewReader(good0+good1+good0+tc.bad+"\n"+good1), counter(), func(metrics.GPUSample) { emitted++ })
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, part := range []string{"line 4", tc.bad, tc.want, NvidiaSMIQuery} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q does not name %q", msg, part)
				}
			}
			if emitted != 1 {
				t.Errorf("%d samples before the bad line, want 1 (the interval it interrupts is not emitted)", emitted)
			}
		})
	}
}
