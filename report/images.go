package report

import (
	"fmt"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// imagesTable is a vision stage's images: TTFT by images in the request (what a shared photo costs
// the turns that resend it), images/s, the encoded bytes a request with images uploads, the
// server's image tokens beside the client's estimate, and the prefix cache's hit on requests with
// images against those without (what history: keep saves, or loses with drop).
func (c columns) imagesTable(rows []runStage) table {
	t := table{title: "Images", header: c.leadHeader("requests with images (images)", "images/s", "image KB/request mean",
		c.statHeader("TTFT 0 images", metrics.SLOMetricTTFT), c.statHeader("TTFT 1 image", metrics.SLOMetricTTFT), c.statHeader("TTFT 2+ images", metrics.SLOMetricTTFT),
		"image tokens server/client mean", "cache hit% with/without images")}
	for _, rs := range rows {
		s := rs.st.Summary
		im := s.Images
		if im == nil {
			t.add(c.lead(rs), "N/A (no images)", "", "", "", "", "", "", "")
			continue
		}
		ttft := make([]string, 3)
		for i := range ttft {
			ttft[i] = "N/A"
			if i < len(im.ByImages) {
				ttft[i] = censored(s, c.statCell(metrics.SLOMetricTTFT, im.ByImages[i].TTFT))
			}
		}
		tokens := "N/A"
		if im.ServerImageTokens.Known() || im.ClientImageTokens.Known() {
			tokens = fmt.Sprintf("%s/%s", meanOrNA(im.ServerImageTokens), meanOrNA(im.ClientImageTokens))
		}
		kb := "N/A"
		if im.BytesPerRequest.Known() {
			kb = resultfiles.Num(im.BytesPerRequest.Mean/1024, 1)
		}
		t.add(c.lead(rs), fmt.Sprintf("%d (%d)", im.Requests, im.Images), resultfiles.Num(im.ImagesPerSec, 2), kb,
			ttft[0], ttft[1], ttft[2], tokens,
			pct(im.CacheHit.V, im.CacheHit.OK)+" / "+pct(im.CacheHitWithout.V, im.CacheHitWithout.OK))
	}
	return t
}

// meanOrNA is a distribution's mean to one decimal, or N/A.
func meanOrNA(d metrics.Dist) string {
	if !d.Known() {
		return "N/A"
	}
	return resultfiles.Num(d.Mean, 1)
}
