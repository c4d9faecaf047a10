package protocol

import (
	"bytes"
	"encoding/base64"
	"runtime"
	"strings"
	"testing"

	"github.com/plload/plload/workload"
)

// Three small images: a JPEG and a PNG given by their files' first bytes (the wire carries them as
// they are; nothing here decodes them), and one by URL, which the server fetches itself.
func testImages() (jpeg, png, byURL *workload.Image) {
	return &workload.Image{Format: "jpeg", Width: 2, Height: 2, Data: []byte{0xff, 0xd8, 0xff, 0xe0}},
		&workload.Image{Format: "png", Width: 3, Height: 1, Data: []byte{0x89, 'P', 'N', 'G'}},
		&workload.Image{Format: "jpeg", Width: 640, Height: 480, URL: "https://example.com/cat.jpg"}
}

// Each API's shape of a user message with images, exactly: the images first (chat's image_url
// parts with a data URL or the URL itself; the Messages API's image blocks with a base64 or url
// source; the Responses API's message item of input_image parts), then the text.
func TestImageMessageShapes(t *testing.T) {
	jpeg, png, byURL := testImages()
	const (
		chatJPEG      = `{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}}`
		chatPNG       = `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}`
		chatURL       = `{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}`
		chatText      = `{"type":"text","text":"What is \"this\"?"}`
		messagesJPEG  = `{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}}`
		messagesPNG   = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}}`
		messagesURL   = `{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}`
		responsesJPEG = `{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/4A==","detail":"auto"}`
		responsesPNG  = `{"type":"input_image","image_url":"data:image/png;base64,iVBORw==","detail":"auto"}`
		responsesURL  = `{"type":"input_image","image_url":"https://example.com/cat.jpg","detail":"auto"}`
		responsesText = `{"type":"input_text","text":"What is \"this\"?"}`
	)
	for _, tc := range []struct {
		name                     string
		images                   []*workload.Image
		chat, messages, response string // the user message's content parts
	}{
		{"one image", []*workload.Image{jpeg},
			chatJPEG + "," + chatText, messagesJPEG + "," + chatText, responsesJPEG + "," + responsesText},
		{"two images", []*workload.Image{jpeg, png},
			chatJPEG + "," + chatPNG + "," + chatText, messagesJPEG + "," + messagesPNG + "," + chatText,
			responsesJPEG + "," + responsesPNG + "," + responsesText},
		{"by URL", []*workload.Image{byURL, png},
			chatURL + "," + chatPNG + "," + chatText, messagesURL + "," + messagesPNG + "," + chatText,
			responsesURL + "," + responsesPNG + "," + responsesText},
	} {
		h := []Message{NewMessage("system", "Be brief.", 3), NewUserMessageWithImages(`What is "this"?`, 4, tc.images)}
		for _, c := range []struct{ endpoint, want string }{
			{"chat", `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[` + tc.chat +
				`]}],"max_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`},
			{"messages", `{"model":"m","system":"Be brief.","messages":[{"role":"user","content":[` + tc.messages +
				`]}],"max_tokens":50,"stream":true}`},
			{"responses", `{"model":"m","instructions":"Be brief.","input":[{"type":"message","role":"user","content":[` + tc.response +
				`]}],"store":false,"max_output_tokens":50,"stream":true}`},
		} {
			if got := build(t, target(c.endpoint), nil, "", h, 50, false); got != c.want {
				t.Errorf("%s, %s:\n got %s\nwant %s", tc.name, c.endpoint, got, c.want)
			}
		}
	}
}

// A photo sent without a caption is its images alone: no empty text part, which the Messages API
// refuses.
func TestImageMessageWithoutText(t *testing.T) {
	jpeg, _, _ := testImages()
	got := build(t, target("chat"), nil, "", []Message{NewUserMessageWithImages("", 0, []*workload.Image{jpeg})}, 1, false)
	want := `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}}]}]`
	if !strings.Contains(got, want) {
		t.Errorf("images alone:\n got %s\nwant %s", got, want)
	}
}

// target.cache_control marks the last block of the history's last message, whatever it is: the
// text after the images, or the last image when there is no text; an earlier message with images
// goes unmarked, and nothing else moves.
func TestImageMessageCacheControl(t *testing.T) {
	jpeg, png, _ := testImages()
	sc := target("messages")
	sc.Target.CacheControl = true
	h := []Message{
		NewMessage("system", "Be brief.", 3),
		NewUserMessageWithImages("Which?", 2, []*workload.Image{jpeg}),
		NewMessage("assistant", "A cat.", 3),
		NewUserMessageWithImages("And this?", 3, []*workload.Image{jpeg, png}),
	}
	got := build(t, sc, nil, "", h, 50, false)
	want := `{"model":"m","system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[` +
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}},{"type":"text","text":"Which?"}]},` +
		`{"role":"assistant","content":"A cat."},` +
		`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},` +
		`{"type":"text","text":"And this?","cache_control":{"type":"ephemeral"}}]}],"max_tokens":50,"stream":true}`
	if got != want {
		t.Errorf("cache_control with images:\n got %s\nwant %s", got, want)
	}
	h[3] = NewUserMessageWithImages("", 0, []*workload.Image{jpeg, png})
	got = build(t, sc, nil, "", h, 50, false)
	if !strings.HasSuffix(got, `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="},"cache_control":{"type":"ephemeral"}}]}],"max_tokens":50,"stream":true}`) ||
		strings.Count(got, "cache_control") != 2 {
		t.Errorf("without text the last image carries the breakpoint: %s", got)
	}
}

// history: drop sends a note where the images were, before the text, in each API's text part;
// the message no longer has images, and keeps its text and tokens.
func TestImageMessageWithoutImages(t *testing.T) {
	jpeg, png, _ := testImages()
	m := NewUserMessageWithImages("Compare.", 2, []*workload.Image{jpeg, png})
	d := m.WithoutImages("[2 images: 2×2 JPEG, 3×1 PNG, not resent]")
	if d.Images() != nil || d.ImageBytes() != 0 || d.Text() != "Compare." || d.Tokens() != 2 || d.Role() != "user" {
		t.Errorf("dropped: images %v, %d bytes, text %q, %d tokens, role %q", d.Images(), d.ImageBytes(), d.Text(), d.Tokens(), d.Role())
	}
	if len(m.Images()) != 2 {
		t.Errorf("WithoutImages changed the message it was called on: %d images", len(m.Images()))
	}
	const note = `"[2 images: 2×2 JPEG, 3×1 PNG, not resent]"`
	for _, c := range []struct{ endpoint, want string }{
		{"chat", `{"role":"user","content":[{"type":"text","text":` + note + `},{"type":"text","text":"Compare."}]}`},
		{"messages", `{"role":"user","content":[{"type":"text","text":` + note + `},{"type":"text","text":"Compare."}]}`},
		{"responses", `{"type":"message","role":"user","content":[{"type":"input_text","text":` + note + `},{"type":"input_text","text":"Compare."}]}`},
	} {
		got := build(t, target(c.endpoint), nil, "", []Message{d}, 1, false)
		if !strings.Contains(got, c.want) || strings.Contains(got, "base64") {
			t.Errorf("%s, dropped:\n got %s\nwant it to hold %s", c.endpoint, got, c.want)
		}
	}
	// No note: the text alone, as a text-only message renders; a text-only message is as it was.
	plain := NewMessage("user", "Compare.", 2)
	if got := m.WithoutImages(""); !bytes.Equal(got.encoded, plain.encoded) || got.parts != nil {
		t.Errorf("WithoutImages(\"\"): %s, parts %v", got.encoded, got.parts)
	}
	if got := plain.WithoutImages("[image]"); got.parts != nil || !bytes.Equal(got.encoded, plain.encoded) {
		t.Errorf("a text-only message changed: %s", got.encoded)
	}
}

// Text is a message with images' text, so the completions transcript and the nonce read it;
// WithText (the nonce's rebuild) keeps the images and the tokens.
func TestImageMessageText(t *testing.T) {
	jpeg, _, _ := testImages()
	m := NewUserMessageWithImages("Caption \"q\"\n", 5, []*workload.Image{jpeg})
	if got := m.Text(); got != "Caption \"q\"\n" {
		t.Errorf("Text() = %q", got)
	}
	n := m.WithText("[abcd1234] " + m.Text())
	if n.Text() != "[abcd1234] Caption \"q\"\n" || n.Tokens() != 5 || len(n.Images()) != 1 || n.Images()[0] != jpeg {
		t.Errorf("WithText: text %q, %d tokens, images %v", n.Text(), n.Tokens(), n.Images())
	}
	got := build(t, target("chat"), nil, "", []Message{n}, 1, false)
	if !strings.Contains(got, `[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}},{"type":"text","text":"[abcd1234] Caption \"q\"\n"}]`) {
		t.Errorf("the nonce's message lost its image: %s", got)
	}
	if d := m.WithoutImages("[image]").WithText("x"); d.parts == nil || d.parts.note != "[image]" {
		t.Errorf("WithText dropped the note of a dropped image")
	}
	got = build(t, target("completions"), nil, "", []Message{NewMessage("system", "Be brief.", 3), m}, 1, false)
	if !strings.Contains(got, `"prompt":"system: Be brief.\n\nuser: Caption \"q\"\n\n\nassistant:"`) {
		t.Errorf("completions: the transcript is the text alone: %s", got)
	}
}

// ImageBytes is each image's base64, or its URL: what the images add to a body.
func TestImageBytes(t *testing.T) {
	jpeg, _, byURL := testImages()
	big := &workload.Image{Format: "png", Data: make([]byte, 1000)}
	m := NewUserMessageWithImages("x", 1, []*workload.Image{jpeg, byURL, big})
	if got, want := m.ImageBytes(), len("/9j/4A==")+len(byURL.URL)+base64.StdEncoding.EncodedLen(1000); got != want {
		t.Errorf("ImageBytes = %d; want %d", got, want)
	}
	if got := NewMessage("user", "x", 1).ImageBytes(); got != 0 {
		t.Errorf("a text message's ImageBytes = %d", got)
	}
	if NewUserMessageWithImages("x", 1, nil).parts != nil {
		t.Error("no images: not NewMessage's message")
	}
}

// A message holds its images by pointer, never their base64: a stage of sessions that keep one
// 1 MB image in their histories holds the image once, not once per message.
func TestImageMessagesShareTheirImages(t *testing.T) {
	im := &workload.Image{Format: "jpeg", Width: 1024, Height: 1024, Data: bytes.Repeat([]byte{0xa5, 0x3c, 0x0f}, 1<<20/3)}
	const sessions = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	msgs := make([]Message, 0, sessions)
	for range sessions {
		msgs = append(msgs, NewUserMessageWithImages("What is in this photo?", 6, []*workload.Image{im}))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// A copy of the base64 per message would be 200 × 1.4 MB; the messages themselves are a few KB.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Errorf("%d messages with one 1 MB image grew the heap by %d bytes; want under 1 MB", sessions, grown)
	}
	for _, m := range msgs {
		if m.Images()[0] != im || cap(m.encoded) > 64 {
			t.Fatalf("a message holds %d bytes of its own or another image", cap(m.encoded))
		}
	}
	runtime.KeepAlive(msgs)
}

// A body of a long history that keeps its images is written in one buffer allocated at its size:
// each image's base64 goes straight into the body, with no string of its own and no growth that
// copies the megabytes again.
func TestImageBodyIsBuiltInPlace(t *testing.T) {
	im := &workload.Image{Format: "jpeg", Width: 512, Height: 512, Data: bytes.Repeat([]byte{1, 2, 3, 4, 5}, 50_000)}
	h := []Message{NewMessage("system", strings.Repeat("You are a helpful assistant. ", 70), 400)}
	for i := range 10 {
		h = append(h, NewUserMessageWithImages(strings.Repeat("Look at this, \"again\". ", 20), 100, []*workload.Image{im}),
			NewMessage("assistant", strings.Repeat("I see it. ", 50), 100))
		if i == 9 {
			h = append(h, NewUserMessageWithImages("And both?", 3, []*workload.Image{im, im}))
		}
	}
	encoded := base64.StdEncoding.EncodeToString(im.Data)
	for _, endpoint := range []string{"chat", "messages", "responses"} {
		sc := target(endpoint)
		sc.Target.CacheControl = endpoint == "messages"
		api, _ := For(endpoint)
		body, err := NewBody(api, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := body.Build(nil, "", h, 100, false)
		if n := strings.Count(string(out), encoded); n != 12 {
			t.Errorf("%s: the body holds the image %d times; want 12", endpoint, n)
		}
		if endpoint == "chat" {
			if n := testing.AllocsPerRun(5, func() { _ = body.Build(nil, "", h, 100, false) }); n != 1 {
				t.Errorf("chat: Build allocates %.0f times; want 1 (the body)", n)
			}
		}
		// The Messages and Responses APIs read the persona's text back (a few small allocations):
		// what counts is that the body's megabytes are allocated once.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const runs = 5
		for range runs {
			_ = body.Build(nil, "", h, 100, false)
		}
		runtime.ReadMemStats(&after)
		if perBuild := (after.TotalAlloc - before.TotalAlloc) / runs; perBuild > uint64(len(out))+uint64(len(out))/10 {
			t.Errorf("%s: a build of a %d-byte body allocates %d bytes; want about the body once", endpoint, len(out), perBuild)
		}
	}
}

// A 20-turn session's body with four 100 KB images kept in its history: the cost per request of
// rendering the images from the shared files.
func BenchmarkBodyChatImages(b *testing.B) {
	im := &workload.Image{Format: "jpeg", Width: 512, Height: 512, Data: bytes.Repeat([]byte{1, 2, 3, 4, 5}, 20_000)}
	h := benchHistory()
	for i := 1; i < len(h); i += 10 {
		h[i] = NewUserMessageWithImages(h[i].Text(), h[i].Tokens(), []*workload.Image{im})
	}
	api, _ := For("chat")
	body, err := NewBody(api, target("chat"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body.Build(nil, "", h, 100, true))))
	b.ReportAllocs()
	for b.Loop() {
		_ = body.Build(nil, "", h, 100, true)
	}
}
