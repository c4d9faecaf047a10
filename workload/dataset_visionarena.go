package workload

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// VisionArena-style conversations (lmarena-ai/VisionArena-Chat exported as JSONL): a line is
// {"conversation_id", "conversation", "images"}, where conversation is the chat's turns — each a
// list of its messages ({"role", "content"}), or the messages as one flat list — and images are the
// images the user shared, which go with the first user message (the arena's users share them
// before they ask). An image is a string (a data URL, a file path or file:// URL relative to the
// dataset's folder, or an http(s) URL, as in an openai dataset) or the object a Hugging Face image
// column exports ({"bytes": base64, "path": name}; the bytes are the image, the path only its name).

const acceptVisionArena = `accepted: {"conversation_id": "...", "conversation": [[{"role": "user"|"assistant"|"system", "content": "..."}, ...], ...] (turns of messages, or one list of messages), "images": [URL or {"bytes": base64}, ...]} with at least one user message; an image URL is a data URL, a file path or file:// URL (relative to the dataset's folder) or an http(s) URL`

func visionArenaLine(text []byte, loader *imageLoader) (rawSession, error) {
	var raw struct {
		ID           json.RawMessage   `json:"conversation_id"`
		Conversation []json.RawMessage `json:"conversation"`
		Images       []json.RawMessage `json:"images"`
	}
	if err := json.Unmarshal(text, &raw); err != nil {
		return rawSession{}, fmt.Errorf("not a JSON object (%s); %s", jsonProblem(err), acceptVisionArena)
	}
	if raw.Conversation == nil {
		return rawSession{}, fmt.Errorf(`"conversation" is missing; %s`, acceptVisionArena)
	}
	type message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	var msgs []message
	var where []string
	for i, item := range raw.Conversation {
		if t := bytes.TrimSpace(item); len(t) > 0 && t[0] == '[' { // a turn: a list of messages
			var turn []json.RawMessage
			if err := json.Unmarshal(t, &turn); err != nil {
				return rawSession{}, fmt.Errorf("conversation[%d] is not a list of messages (%s); %s", i, jsonProblem(err), acceptVisionArena)
			}
			for j, item := range turn {
				var m message
				if err := json.Unmarshal(item, &m); err != nil {
					return rawSession{}, fmt.Errorf("conversation[%d][%d] is not a message (%s); %s", i, j, jsonProblem(err), acceptVisionArena)
				}
				msgs, where = append(msgs, m), append(where, fmt.Sprintf("conversation[%d][%d]", i, j))
			}
			continue
		}
		var m message
		if err := json.Unmarshal(item, &m); err != nil || string(bytes.TrimSpace(item)) == "null" {
			return rawSession{}, fmt.Errorf("conversation[%d] is neither a message nor a list of messages; %s", i, acceptVisionArena)
		}
		msgs, where = append(msgs, m), append(where, fmt.Sprintf("conversation[%d]", i))
	}
	rs := rawSession{}
	if len(raw.ID) > 0 && string(raw.ID) != "null" {
		var id string
		if json.Unmarshal(raw.ID, &id) != nil { // a number: its text
			id = string(raw.ID)
		}
		rs.id = id
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return rawSession{}, fmt.Errorf("%s.role %q; %s", where[i], m.Role, acceptVisionArena)
		}
		c, parts, ok := content(m.Content)
		if !ok && len(m.Content) > 0 && string(m.Content) != "null" {
			return rawSession{}, fmt.Errorf("%s.content is neither text nor a list of text parts; %s", where[i], acceptVisionArena)
		}
		if len(parts) > 0 {
			return rawSession{}, fmt.Errorf(`%s.content has image parts; a VisionArena line keeps its images in "images"; %s`, where[i], acceptVisionArena)
		}
		rs.turns = append(rs.turns, rawTurn{role: m.Role, text: c, delayMs: -1, atMs: -1})
	}
	first := -1
	for i, t := range rs.turns {
		if t.role == "user" {
			first = i
			break
		}
	}
	if first < 0 {
		return rawSession{}, fmt.Errorf("no user message; %s", acceptVisionArena)
	}
	for i, item := range raw.Images {
		im, err := visionArenaImage(item, loader)
		if err != nil {
			return rawSession{}, fmt.Errorf("images[%d]: %v; %s", i, err, acceptImage(loader.maxBytes))
		}
		rs.turns[first].images = append(rs.turns[first].images, im)
	}
	return rs, checkHasUser(rs, acceptVisionArena)
}

// visionArenaImage reads one entry of a line's images: a URL string, or {"bytes": base64}.
func visionArenaImage(item json.RawMessage, loader *imageLoader) (*Image, error) {
	var ref string
	if json.Unmarshal(item, &ref) == nil {
		return loader.load(ref)
	}
	var obj struct {
		Bytes *string `json:"bytes"`
		Path  string  `json:"path"`
		URL   string  `json:"url"`
	}
	if err := json.Unmarshal(item, &obj); err != nil {
		return nil, fmt.Errorf("neither a URL nor an object with bytes (%s)", jsonProblem(err))
	}
	switch {
	case obj.Bytes != nil:
		if n := base64.StdEncoding.DecodedLen(len(*obj.Bytes)); n > loader.maxBytes+loader.maxBytes/16+3 {
			return nil, fmt.Errorf("about %d bytes of image, over the limit of %d", n, loader.maxBytes)
		}
		data, err := base64.StdEncoding.DecodeString(*obj.Bytes)
		if err != nil {
			return nil, fmt.Errorf("bytes that are not base64 (%v)", err)
		}
		what := "the image's bytes"
		if obj.Path != "" {
			what = fmt.Sprintf("the bytes of %q", obj.Path)
		}
		return loader.fromBytes(data, what)
	case obj.URL != "":
		return loader.load(obj.URL)
	case obj.Path != "":
		return loader.load(obj.Path)
	}
	return nil, fmt.Errorf(`an object with neither "bytes", "url" nor "path"`)
}
