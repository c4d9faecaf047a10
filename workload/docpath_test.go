package workload

import (
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
)

func readDoc(t *testing.T, text string) yaml.MapSlice {
	t.Helper()
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions([]byte(text), &doc, yaml.UseOrderedMap()); err != nil {
		t.Fatal(err)
	}
	return doc
}

func writeDoc(t *testing.T, doc yaml.MapSlice) string {
	t.Helper()
	out, err := yaml.MarshalWithOptions(doc, yaml.IndentSequence(true))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

const docPathScenario = `name: s
load:
  mode: concurrency
  stages:
    - concurrency: 1
session:
  turns:
  think_time: 1s
`

func TestDocGet(t *testing.T) {
	doc := readDoc(t, docPathScenario)
	for _, tc := range []struct {
		path string
		want any
		ok   bool
	}{
		{"name", "s", true},
		{"load.mode", "concurrency", true},
		{"session.think_time", "1s", true},
		{"session.turns", nil, true}, // written with no value: there, and nil
		{"session.seed", nil, false},
		{"name.first", nil, false}, // under a scalar
		{"load.stages.concurrency", nil, false},
		{"missing", nil, false},
	} {
		got, ok := DocGet(doc, tc.path)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	// A key YAML reads as a number or a bool is matched by its text.
	odd := readDoc(t, "1: one\ntrue: yes\n")
	if v, ok := DocGet(odd, "1"); !ok || v != "one" {
		t.Errorf("1: got (%v, %v)", v, ok)
	}
	if odd = DocSet(odd, "true", "no"); len(odd) != 2 || odd[1].Value != "no" {
		t.Errorf("true: set as %v", odd)
	}
}

func TestDocSetAndDelete(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(yaml.MapSlice) yaml.MapSlice
		want string
	}{
		{"replace in place", func(d yaml.MapSlice) yaml.MapSlice { return DocSet(d, "load.mode", "batch") },
			"name: s\nload:\n  mode: batch\n  stages:\n    - concurrency: 1\nsession:\n  turns: null\n  think_time: 1s\n"},
		{"new keys go last, mappings made on the way", func(d yaml.MapSlice) yaml.MapSlice {
			return DocSet(DocSet(d, "slo.ttft.p95", "500ms"), "seed", 7)
		}, "name: s\nload:\n  mode: concurrency\n  stages:\n    - concurrency: 1\nsession:\n  turns: null\n  think_time: 1s\nslo:\n  ttft:\n    p95: 500ms\nseed: 7\n"},
		{"a scalar on the way becomes a mapping", func(d yaml.MapSlice) yaml.MapSlice { return DocSet(d, "name.first", "x") },
			"name:\n  first: x\nload:\n  mode: concurrency\n  stages:\n    - concurrency: 1\nsession:\n  turns: null\n  think_time: 1s\n"},
		{"delete a nested key", func(d yaml.MapSlice) yaml.MapSlice { return DocDelete(d, "session.turns") },
			"name: s\nload:\n  mode: concurrency\n  stages:\n    - concurrency: 1\nsession:\n  think_time: 1s\n"},
		{"delete a top key", func(d yaml.MapSlice) yaml.MapSlice { return DocDelete(d, "load") },
			"name: s\nsession:\n  turns: null\n  think_time: 1s\n"},
		{"delete what is not there", func(d yaml.MapSlice) yaml.MapSlice {
			return DocDelete(DocDelete(DocDelete(d, "load.arrival"), "name.first"), "workload.trace")
		}, docPathScenario},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := writeDoc(t, tc.edit(readDoc(t, docPathScenario)))
			want := tc.want
			if want == docPathScenario {
				want = writeDoc(t, readDoc(t, docPathScenario))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
