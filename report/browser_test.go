package report

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestHTMLInHeadlessChromium opens report.html in Debian's Chromium and saves a screenshot
// (report/testdata/.. is not touched: the file lands in PLLOAD_SCREENSHOT_DIR when set, else a temp
// folder). It skips, saying so, when no Chromium is installed.
func TestHTMLInHeadlessChromium(t *testing.T) {
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium found (apt-get install chromium); report.html was not opened in a browser")
	}
	sc, r := goldenReport(t)
	page, err := HTML([]Run{{Name: "golden", Stages: r.Stages}}, "plload test", methodSection(r, sc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	os.WriteFile(html, page, 0o644)
	outDir := os.Getenv("PLLOAD_SCREENSHOT_DIR")
	if outDir == "" {
		outDir = dir
	}
	shot := filepath.Join(outDir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=1280,4000", "--screenshot="+shot, "file://"+html)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("Chromium could not run here (%v): %s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The page is not blank: a good share of its pixels are not white.
	b := img.Bounds()
	dark := 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r+g+bl < 3*0xe000 {
				dark++
			}
		}
	}
	if dark < 500 {
		t.Fatalf("the screenshot looks blank (%d dark samples)", dark)
	}
	t.Logf("screenshot: %s", shot)
}
