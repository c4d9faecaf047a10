package lockstep

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Target is one --target of plload ab, with its --model: the name that names its results directory,
// its OpenAI base URL, and the model to ask it for ("": the scenario's target.model).
type Target struct{ Name, URL, Model string }

// files are the files the A/B writes next to the sides' directories, so no side may be named so.
var files = []string{"ab.json", "ab.md"}

// targetName is what a target's name may hold: it names its results directory.
var targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseTargets reads the two --target NAME=URL flags (A first) and any --model NAME=MODEL. What it
// refuses is a runner.BadInput error naming the flag and what it accepts.
func ParseTargets(targets, models []string) ([]Target, error) {
	const usage = "accepted: exactly two, --target A=URL --target B=URL (the first is A, the incumbent), such as --target old=http://10.0.0.5:8000/v1"
	if len(targets) != 2 {
		return nil, badInput("--target given %d time(s): %s; nothing was sent", len(targets), usage)
	}
	var out []Target
	for _, t := range targets {
		name, raw, ok := strings.Cut(t, "=")
		if !ok || name == "" || raw == "" {
			return nil, badInput("--target %q: not NAME=URL; %s; nothing was sent", t, usage)
		}
		if !targetName.MatchString(name) {
			return nil, badInput("--target %q: the name %q names its results directory: accepted: letters, digits, '.', '_', '-' (up to 64, not starting with a punctuation mark); nothing was sent", t, name)
		}
		if slices.ContainsFunc(files, func(f string) bool { return strings.EqualFold(f, name) }) {
			// The side's directory would take the comparison's own file name: the run is lost at the end.
			return nil, badInput("--target %q: the name %q is a file of the A/B's results (%s); accepted: any other name; nothing was sent", t, name, strings.Join(files, ", "))
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, badInput("--target %q: %q is not an http:// or https:// URL with a host; accepted: the server's OpenAI base URL, such as http://10.0.0.5:8000/v1; nothing was sent", t, raw)
		}
		for _, o := range out {
			if strings.EqualFold(o.Name, name) {
				return nil, badInput("--target: the name %q is given twice (names are compared without case: they name directories); accepted: two different names; nothing was sent", name)
			}
		}
		out = append(out, Target{Name: name, URL: raw})
	}
	seen := map[string]bool{}
	for _, m := range models {
		name, model, ok := strings.Cut(m, "=")
		i := slices.IndexFunc(out, func(t Target) bool { return t.Name == name })
		switch {
		case !ok || model == "":
			return nil, badInput("--model %q: not NAME=MODEL; accepted: a target's name and the model to ask it for, such as --model %s=llama-3-8b; nothing was sent", m, out[1].Name)
		case i < 0:
			return nil, badInput("--model %q: no --target is named %q; accepted: %s or %s; nothing was sent", m, name, out[0].Name, out[1].Name)
		case seen[name]:
			return nil, badInput("--model: target %q is given a model twice; accepted: one --model per target; nothing was sent", name)
		}
		seen[name], out[i].Model = true, model
	}
	return out, nil
}
