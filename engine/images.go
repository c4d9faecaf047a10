package engine

import (
	"fmt"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/protocol"
)

// A vision session's images ride in its history: with session.images.history keep (a chat app's
// way) every later request sends them again, with drop each is a short note once its turn has been
// answered. The images themselves are shared (*workload.Image), never copied per message.

// dropImages replaces the images of the history sent so far by a note each, under history: drop,
// before a new turn joins it.
func (s *stageRun) dropImages(ss *session) {
	if !s.cfg.Scenario.DropsImages() {
		return
	}
	for i, m := range ss.history {
		if ims := m.Images(); len(ims) > 0 {
			note := ""
			for k, im := range ims {
				if k > 0 {
					note += " "
				}
				if im.URL != "" { // a dataset's image by URL: its size is the server's to know
					note += "[image by URL, not resent]"
				} else {
					note += fmt.Sprintf("[image: %d×%d %s, not resent]", im.Width, im.Height, im.Format)
				}
			}
			ss.history[i] = m.WithoutImages(note)
		}
	}
}

// recordImages puts the images the request sent — its new message's and its history's — in its
// record: their count, pixels, encoded bytes and the client's estimate of their tokens.
func (s *stageRun) recordImages(rec *metrics.Record, history []protocol.Message) {
	count, pixels, bytes, tokens := 0, 0, 0, 0
	sized := true // an image by URL has no size the client knows
	for _, m := range history {
		for _, im := range m.Images() {
			count, pixels, bytes = count+1, pixels+im.Pixels(), bytes+len(im.Data)
			tokens += s.cfg.Scenario.ImageTokens(im)
			sized = sized && im.Pixels() > 0
		}
	}
	if count == 0 {
		return
	}
	rec.ImageCount, rec.ImageBytes, rec.ClientImageTokens = metrics.Some(count), metrics.Some(bytes), metrics.Some(tokens)
	if sized { // else unknown, not the sized images' pixels alone
		rec.ImagePixels = metrics.Some(pixels)
	}
}
