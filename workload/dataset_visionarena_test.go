package workload

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// vaLine is one VisionArena line: its conversation (turns of messages) and its images.
func vaLine(t *testing.T, conversation any, images ...any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"conversation_id": "c1", "conversation": conversation, "images": images, "model": "m", "num_turns": 2})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// TestVisionArenaRead: a VisionArena line's turns (lists of messages, or one flat list) become the
// conversation, and its images — a Hugging Face {bytes, path} object, a data URL, a file and an
// https URL — go with the first user message, in their order; the same image is one *Image.
func TestVisionArenaRead(t *testing.T) {
	dir := t.TempDir()
	pngData, jpegData := encodePNG(t, 40, 30, 1), encodeJPEG(t, 64, 48, 2)
	writeFile(t, filepath.Join(dir, "imgs", "b.jpg"), jpegData)
	web := "https://example.com/cat.png"
	data := vaLine(t, [][]any{{msg("user", "What is in this picture?"), msg("assistant", "A cat.")}, {msg("user", "What colour?"), msg("assistant", "Grey.")}},
		map[string]any{"bytes": base64.StdEncoding.EncodeToString(pngData), "path": "cat.png"}, "imgs/b.jpg", web) +
		vaLine(t, []any{msg("system", "Be brief."), msg("user", "Read the sign."), msg("assistant", "STOP")}, dataURL("image/png", pngData))
	path := filepath.Join(dir, "va.jsonl")
	writeFile(t, path, []byte(data))
	sessions, lines, err := readDatasetWith(path, FormatVisionArena, DefaultImageMaxBytes)
	if err != nil || lines != 2 || len(sessions) != 2 {
		t.Fatalf("%d sessions of %d lines: %v", len(sessions), lines, err)
	}
	a := sessions[0]
	if a.id != "c1" || len(a.turns) != 4 || a.turns[2].text != "What colour?" || a.turns[3].role != "assistant" {
		t.Fatalf("first line: %+v", a)
	}
	ims := a.turns[0].images
	if len(ims) != 3 || ims[0].Format != "png" || ims[0].Width != 40 || ims[1].Format != "jpeg" || ims[1].Height != 48 || ims[2].URL != web || len(a.turns[2].images) != 0 {
		t.Fatalf("first line's images: %+v", ims)
	}
	b := sessions[1]
	if b.turns[0].role != "system" || len(b.turns[0].images) != 0 || len(b.turns[1].images) != 1 || b.turns[1].images[0] != ims[0] {
		t.Errorf("second line: the images go with the first user message, and the PNG is the dataset's one copy: %+v", b.turns)
	}
	if !bytes.Equal(ims[0].Data, pngData) {
		t.Error("the PNG's bytes changed")
	}
}

// TestVisionArenaRefused: a bad VisionArena line is refused by validate at its line, naming what
// is wrong and what is accepted, before any traffic.
func TestVisionArenaRefused(t *testing.T) {
	dir := t.TempDir()
	good := vaLine(t, [][]any{{msg("user", "Hi")}})
	for _, c := range []struct {
		name, line, want string
	}{
		{"no conversation", `{"images": []}` + "\n", `"conversation" is missing`},
		{"not an object", `[1, 2]` + "\n", "not a JSON object"},
		{"bad role", vaLine(t, [][]any{{msg("human", "Hi")}}), `conversation[0][0].role "human"`},
		{"no user", vaLine(t, [][]any{{msg("assistant", "Hi")}}), "no user message"},
		{"bad bytes", vaLine(t, [][]any{{msg("user", "Hi")}}, map[string]any{"bytes": "@@@"}), "images[0]: bytes that are not base64"},
		{"not an image", vaLine(t, [][]any{{msg("user", "Hi")}}, map[string]any{"bytes": base64.StdEncoding.EncodeToString([]byte("SECRET")), "path": "x.png"}), `images[0]: the bytes of "x.png" is not an image`},
		{"missing file", vaLine(t, [][]any{{msg("user", "Hi")}}, "nope.png"), `images[0]: file "nope.png"`},
		{"empty object", vaLine(t, [][]any{{msg("user", "Hi")}}, map[string]any{}), `neither "bytes", "url" nor "path"`},
		{"bad message in a turn", vaLine(t, [][]any{{msg("user", "Hi"), map[string]any{"role": 5}}}), "conversation[0][1] is not a message"},
		{"null turn", `{"conversation": [null]}` + "\n", "conversation[0] is neither a message nor a list of messages"},
		{"image parts in content", vaLine(t, [][]any{{map[string]any{"role": "user", "content": []any{imagePartOf("a.png")}}}}), `keeps its images in "images"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(good+c.line))
			text := `name: va
target: {base_url: mock}
session: {think_time: 0s}
workload:
  dataset: {file: d.jsonl, format: visionarena}
load:
  mode: concurrency
  stages:
    - {concurrency: 1, duration: 1s}
`
			writeFile(t, filepath.Join(dir, "s.yaml"), []byte(text))
			_, issues := Load(filepath.Join(dir, "s.yaml"), LoadOptions{Getenv: noEnv})
			msg := fmt.Sprint(issues.Err())
			for _, want := range []string{"workload.dataset.file", "d.jsonl line 2", c.want, "accepted:"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "SECRET") {
				t.Errorf("the error quotes the file: %s", msg)
			}
		})
	}
}
