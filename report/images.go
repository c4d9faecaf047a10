package report

import (
	"fmt"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// A vision stage's images, in three tables: what the stage sent and the server counted (images/s,
// the input tokens that were images, the upload, the server's image tokens beside the client's
// estimate, the prefix cache's hit on requests with images against those without: what history:
// keep saves, or loses with drop); the requests by their images (0, 1, 2+: TTFT, E2E, the request's
// bytes, and their share of $/1K turns); and TTFT by the images' pixels.
func (c columns) imagesTables(rows []runStage) []table {
	sent := table{title: "Images", header: c.leadHeader("requests with images (images)", "images/s", "input tok/s image/text",
		"image KB/request mean", "image tokens server/client mean", "cache hit% with/without images")}
	byImages := table{title: "Images: by images in the request", header: c.leadHeader("images", "requests",
		c.statHeader("TTFT", metrics.SLOMetricTTFT), c.statHeader("E2E", metrics.SLOMetricE2E), "request KB mean", "$/1K turns (share by E2E)")}
	byPixels := table{title: "Images: by the request's pixels", header: c.leadHeader("pixels", "requests",
		c.statHeader("TTFT", metrics.SLOMetricTTFT), c.statHeader("E2E", metrics.SLOMetricE2E))}
	for _, rs := range rows {
		s := rs.st.Summary
		im := s.Images
		if im == nil {
			sent.add(c.lead(rs), "N/A (no images)", "", "", "", "", "")
			continue
		}
		tokens := "N/A"
		if im.ServerImageTokens.Known() || im.ClientImageTokens.Known() {
			tokens = fmt.Sprintf("%s/%s", meanOrNA(im.ServerImageTokens), meanOrNA(im.ClientImageTokens))
		}
		sent.add(c.lead(rs), fmt.Sprintf("%d (%d)", im.Requests, im.Images), resultfiles.Num(im.ImagesPerSec, 2),
			resultfiles.Num(im.ImageInTokPerSec, 1)+" / "+resultfiles.Num(im.TextInTokPerSec, 1), kbOrNA(im.BytesPerRequest), tokens,
			pct(im.CacheHit.V, im.CacheHit.OK)+" / "+pct(im.CacheHitWithout.V, im.CacheHitWithout.OK))
		for _, b := range im.ByImages {
			if b.Requests == 0 {
				continue
			}
			byImages.add(c.lead(rs), b.Images, fmt.Sprint(b.Requests), censored(s, c.statCell(metrics.SLOMetricTTFT, b.TTFT)),
				censored(s, c.statCell(metrics.SLOMetricE2E, b.E2E)), kbOrNA(b.RequestBytes), costText(rs.st, b.USDPer1KTurns, 4))
		}
		for _, b := range im.ByPixels {
			byPixels.add(c.lead(rs), b.Pixels, fmt.Sprint(b.Requests), censored(s, c.statCell(metrics.SLOMetricTTFT, b.TTFT)),
				censored(s, c.statCell(metrics.SLOMetricE2E, b.E2E)))
		}
	}
	out := []table{sent}
	for _, t := range []table{byImages, byPixels} {
		if len(t.rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// meanOrNA is a distribution's mean to one decimal, or N/A.
func meanOrNA(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return resultfiles.Num(d.Mean, 1)
}

// kbOrNA is a distribution of bytes' mean in KB, or N/A.
func kbOrNA(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return resultfiles.Num(d.Mean/1024, 1)
}
