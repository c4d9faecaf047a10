package sse

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
)

// ToolCallDelta is one entry of a chunk's delta.tool_calls.
type ToolCallDelta struct {
	Index     int
	ID, Type  string // present on a call's first delta
	Name      string // function.name, usually only on the first delta
	Arguments string // function.arguments piece ("" when absent)
}

// ToolCall is one assembled call.
type ToolCall struct {
	ID, Type, Name, Arguments string // Type "function" when the server gave none
}

// ToolCallAssembler gathers a stream's deltas by index: id, type and name from the deltas that carry
// them, arguments concatenated in arrival order. A delta whose id differs from the id its index already
// has starts a new call at that index (servers that number every call 0 send one id per call). The
// zero value is ready to use; it is not safe for concurrent use.
type ToolCallAssembler struct {
	calls []assembling
}

type assembling struct {
	index         int
	id, typ, name string
	args          []byte
}

// Add gathers one chunk's deltas.
func (a *ToolCallAssembler) Add(ds []ToolCallDelta) {
	for i := range ds {
		d := &ds[i]
		c := a.find(d.Index)
		if c == nil || d.ID != "" && c.id != "" && d.ID != c.id {
			c = a.open(d.Index)
		}
		if d.ID != "" {
			c.id = d.ID
		}
		if d.Type != "" {
			c.typ = d.Type
		}
		if d.Name != "" {
			c.name = d.Name
		}
		c.args = append(c.args, d.Arguments...)
	}
}

// find returns the latest call at index, or nil.
func (a *ToolCallAssembler) find(index int) *assembling {
	for i := len(a.calls) - 1; i >= 0; i-- {
		if a.calls[i].index == index {
			return &a.calls[i]
		}
	}
	return nil
}

// open starts a call at index, reusing the argument buffer of a call from before a Reset.
func (a *ToolCallAssembler) open(index int) *assembling {
	n := len(a.calls)
	if n < cap(a.calls) {
		a.calls = a.calls[:n+1]
	} else {
		a.calls = append(a.calls, assembling{})
	}
	c := &a.calls[n]
	*c = assembling{index: index, args: c.args[:0]}
	return c
}

// Calls returns the assembled calls ordered by index (calls sharing an index in arrival order); nil
// when none.
func (a *ToolCallAssembler) Calls() []ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	order := make([]int, len(a.calls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(a.calls[x].index, a.calls[y].index) })
	out := make([]ToolCall, len(order))
	for i, k := range order {
		c := &a.calls[k]
		typ := c.typ
		if typ == "" {
			typ = "function"
		}
		out[i] = ToolCall{ID: c.id, Type: typ, Name: c.name, Arguments: string(c.args)}
	}
	return out
}

// Reset forgets every call, keeping the buffers for the next stream.
func (a *ToolCallAssembler) Reset() { a.calls = a.calls[:0] }

// AppendToolCallsJSON appends the calls as the tool_calls array of an assistant message:
// [{"id":"…","type":"function","function":{"name":"…","arguments":"…"}}], arguments as a JSON string
// of the assembled text (an empty Type is written "function"). No calls append [].
func AppendToolCallsJSON(b []byte, calls []ToolCall) []byte {
	b = append(b, '[')
	for i := range calls {
		c := &calls[i]
		if i > 0 {
			b = append(b, ',')
		}
		typ := c.Type
		if typ == "" {
			typ = "function"
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, c.ID)
		b = append(b, `,"type":`...)
		b = appendJSONString(b, typ)
		b = append(b, `,"function":{"name":`...)
		b = appendJSONString(b, c.Name)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, c.Arguments)
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// appendJSONString writes s as a JSON string as encoding/json does (an invalid byte becomes \ufffd,
// U+2028 and U+2029 are escaped), without its HTML escaping: a tool message is rare enough that
// its cost does not matter, and one JSON string writer is enough for the package.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}
