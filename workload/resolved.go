package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// Masked stands in for every secret plload writes or prints.
const Masked = "***"

// IsSecretHeader reports whether a header's value must never be written: its name mentions auth, key,
// token, cookie or secret.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "cookie", "secret"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// maskValue hides v when the YAML path names a secret header.
func maskValue(path, v string) string {
	if name, ok := strings.CutPrefix(path, "target.headers."); ok && IsSecretHeader(name) {
		return Masked
	}
	return v
}

// Masked returns a copy of the scenario safe to write or print: secret header values are "***", and
// so are the passwords and secret-named query values of the URLs it names (MaskURL). api_key_env
// names a variable, not a key, and stays.
func (s *Scenario) Masked() *Scenario {
	c := *s
	if s.Target.Headers != nil {
		c.Target.Headers = maps.Clone(s.Target.Headers)
		for k := range c.Target.Headers {
			c.Target.Headers[k] = maskValue("target.headers."+k, c.Target.Headers[k])
		}
	}
	c.Target.BaseURL = MaskURL(s.Target.BaseURL)
	c.Target.ServerMetricsURL = MaskURL(s.Target.ServerMetricsURL)
	if s.Target.GPUMetricsURL != nil {
		c.Target.GPUMetricsURL = make(URLList, len(s.Target.GPUMetricsURL))
		for i, u := range s.Target.GPUMetricsURL {
			c.Target.GPUMetricsURL[i] = MaskURL(u)
		}
	}
	if rag := s.Session.RAG; rag != nil {
		rc := *rag
		for _, step := range []**StepTarget{&rc.Embed, &rc.Rerank} {
			if *step != nil {
				st := **step
				st.BaseURL = MaskURL(st.BaseURL)
				*step = &st
			}
		}
		c.Session.RAG = &rc
	}
	return &c
}

// ResolvedYAML is the scenario with every default filled and secrets masked: scenario.resolved.yaml.
// It is a valid scenario file itself (the Scenario's bookkeeping fields are unexported or yaml:"-").
//
// It is self-contained: the files it names (personas.file, target.tls.ca_file, workload.dataset.file,
// workload.trace.file) are written as
// absolute paths, because the resolved file lives in a results directory, not beside the original
// scenario, and is reloaded from anywhere (plload gate, or `plload run` of it to reproduce a run).
// Each such file's sha256 at the time of the run is written beside it as a comment, for a reader who
// wants to know whether it changed since. Why not embed the personas instead: the schema has no
// inline persona list, and adding one would make the resolved file a different kind of scenario from
// the one the user wrote; a changed persona file is caught anyway, because it changes the stage's
// dataset_sha256 and the gate refuses to compare runs whose workloads differ.
func (s *Scenario) ResolvedYAML() ([]byte, error) {
	m := s.Masked()
	comments := yaml.CommentMap{}
	type fileField struct {
		yamlPath string
		value    *string
	}
	files := []fileField{
		{"$.target.tls.ca_file", &m.Target.TLS.CAFile},
		{"$.personas.file", &m.Personas.File},
	}
	if m.Workload != nil { // a copy: the paths are made absolute in the resolved file only
		w := *m.Workload
		if w.Dataset != nil {
			d := *w.Dataset
			w.Dataset = &d
			files = append(files, fileField{"$.workload.dataset.file", &d.File})
		}
		if w.Trace != nil {
			tr := *w.Trace
			w.Trace = &tr
			files = append(files, fileField{"$.workload.trace.file", &tr.File})
		}
		m.Workload = &w
	}
	if t := m.Session.Tools; t != nil && t.File != "" {
		tc := *t
		m.Session.Tools = &tc
		files = append(files, fileField{"$.session.tools.file", &tc.File})
	}
	if rf := m.Session.ResponseFormat; rf != nil {
		if f := schemaFile(rf.Schema); f != "" {
			rc := *rf
			abs, err := filepath.Abs(s.resolvePath(f))
			if err != nil {
				return nil, fmt.Errorf("%s: session.response_format.schema.file %q: %w", s.File, f, err)
			}
			rc.Schema = map[string]any{"file": abs}
			if sum, err := fileSHA256(abs); err == nil {
				comments["$.session.response_format.schema.file"] = []*yaml.Comment{yaml.LineComment(" sha256 " + sum)}
			}
			m.Session.ResponseFormat = &rc
		}
	}
	for _, f := range files {
		if *f.value == "" {
			continue
		}
		abs, err := filepath.Abs(s.resolvePath(*f.value))
		if err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", s.File, strings.TrimPrefix(f.yamlPath, "$."), *f.value, err)
		}
		*f.value = abs
		if sum, err := fileSHA256(abs); err == nil {
			comments[f.yamlPath] = []*yaml.Comment{yaml.LineComment(" sha256 " + sum)}
		}
	}
	if !s.Retrieval() {
		return yaml.MarshalWithOptions(m, yaml.IndentSequence(true), yaml.WithComment(comments))
	}
	// A retrieval stage has no personas and no sessions (retrievalRules refuses them): the file
	// leaves both sections out, as the user's did.
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	var doc yaml.MapSlice
	if err := yaml.Unmarshal(out, &doc); err != nil {
		return nil, err
	}
	doc = slices.DeleteFunc(doc, func(it yaml.MapItem) bool { return it.Key == "personas" || it.Key == "session" })
	return yaml.MarshalWithOptions(doc, yaml.IndentSequence(true), yaml.WithComment(comments))
}

// fileSHA256 is the hex sha256 of a file's bytes.
func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// ReadGateRules returns the gate: list of a scenario file (a run's scenario.resolved.yaml), reading
// nothing else of it. The gate needs only these rules: a full Load would also re-read the persona
// and CA files and re-apply today's validation, so a results directory copied to another machine, or
// judged after a later plload tightened a rule, would fail to gate for reasons that have nothing to
// do with its rules. Every error names the file and says what to do; none is swallowed, because a
// gate that silently dropped the scenario's rules would pass a run whose own gate fails.
func ReadGateRules(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read the run's scenario (%v); the gate reads the scenario's gate: rules from it; "+
			"plload run writes it into every results directory: restore it from the run", path, err)
	}
	var doc struct {
		Gate []string `yaml:"gate"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: gate: cannot be read (%v); accepted: a list of rules such as [\"ttft_p95 < 500ms\"]; "+
			"fix or restore the file", path, yaml.FormatError(err, false, false))
	}
	return doc.Gate, nil
}
