package workload

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

type position struct{ line, column int }

// decoder fills a Go value from the YAML syntax tree itself rather than through yaml.Unmarshal, so
// every problem carries the file, the YAML path, the line and column, what was found and what is
// accepted — and so every problem in the file is reported at once, not only the first.
type decoder struct {
	file    string
	issues  Issues
	depth   int                 // nesting of value calls: a recursive alias must not recurse forever
	pos     map[string]position // where each path's value starts
	keyPos  map[string]position // where each path's key starts (mapping entries only)
	anchors map[string]ast.Node
}

func (d *decoder) add(sev Severity, at position, path, format string, args ...any) {
	d.issues = append(d.issues, &Issue{
		Severity: sev, File: d.file, Line: at.line, Column: at.column,
		Path: path, Message: fmt.Sprintf(format, args...),
	})
}

func posOf(n ast.Node) position {
	if n == nil || n.GetToken() == nil {
		return position{1, 1}
	}
	p := n.GetToken().Position
	return position{p.Line, p.Column}
}

// parseScenarioYAML decodes data into s, recording where each path's value starts.
func parseScenarioYAML(file string, data []byte, s *Scenario) Issues {
	d := &decoder{file: file, pos: map[string]position{}, keyPos: map[string]position{}, anchors: map[string]ast.Node{}}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		at, msg := position{1, 1}, err.Error()
		var ye yaml.Error
		if errors.As(err, &ye) {
			if tk := ye.GetToken(); tk != nil {
				at = position{tk.Position.Line, tk.Position.Column}
			}
			msg = ye.GetMessage()
		}
		d.add(SeverityError, at, "", "not valid YAML: %s", msg)
		return d.issues
	}
	var body ast.Node
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		if body != nil {
			d.add(SeverityError, posOf(doc.Body), "", "found a second YAML document; accepted: one scenario per file")
			break
		}
		body = doc.Body
	}
	if body == nil {
		d.add(SeverityError, position{1, 1}, "", "the file is empty; accepted: a scenario mapping with name, target, personas, session, load, slo and cost")
		return d.issues
	}
	d.value(body, "", reflect.ValueOf(s).Elem(), "")
	s.positions, s.keyPositions = d.pos, d.keyPos
	return d.issues
}

// resolve follows anchors, aliases and tags down to the node that holds the value.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			if name, ok := v.Name.(ast.ScalarNode); ok {
				d.anchors[fmt.Sprint(name.GetValue())] = v.Value
			}
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if s, ok := v.Value.(ast.ScalarNode); ok {
				name = fmt.Sprint(s.GetValue())
			}
			target, ok := d.anchors[name]
			if !ok {
				return n
			}
			n = target
		default:
			return n
		}
	}
	return n
}

func mappingEntries(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

func keyString(k ast.MapKeyNode) string {
	if s, ok := k.(ast.ScalarNode); ok {
		return fmt.Sprint(s.GetValue())
	}
	return k.String()
}

func join(path, key string) string {
	if path == "" || key == "" {
		return path + key
	}
	return path + "." + key
}

var (
	durationType = reflect.TypeFor[Duration]()
	distType     = reflect.TypeFor[Dist]()
	outputType   = reflect.TypeFor[OutputTokens]()
	nonceType    = reflect.TypeFor[Nonce]()
	rateType     = reflect.TypeFor[Rate]()
	urlListType  = reflect.TypeFor[URLList]()
)

// maxDepth bounds how deep a scenario nests; only a recursive alias gets near it.
const maxDepth = 64

// maxExtraBodyNodes bounds extra_body after aliases are expanded (a "billion laughs" file is tiny on
// disk and enormous in memory).
const maxExtraBodyNodes = 100_000

// value decodes node n into v. tag is the struct tag of the field v came from.
func (d *decoder) value(n ast.Node, path string, v reflect.Value, tag reflect.StructTag) {
	n = d.resolve(n)
	at := posOf(n)
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDepth {
		d.add(SeverityError, at, path, "nested more than %d levels deep (a recursive alias?); accepted: a scenario mapping", maxDepth)
		return
	}
	if _, isNull := n.(*ast.NullNode); isNull {
		if v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct && v.Type().Elem() != distType {
			// `mock:` with nothing after it still asks for the mock, with its defaults.
			v.Set(reflect.New(v.Type().Elem()))
			d.pos[path] = at
		}
		return
	}
	d.pos[path] = at
	if d.special(n, at, path, v, tag) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, path, v.Elem(), tag)
	case reflect.Struct:
		d.structure(n, path, v)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.add(SeverityError, at, path, "found %s; accepted: a list (lines starting with '- ')", describe(n))
			return
		}
		out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
		for i, item := range seq.Values {
			d.value(item, fmt.Sprintf("%s[%d]", path, i), out.Index(i), tag)
		}
		v.Set(out)
	case reflect.Map:
		d.mapping(n, path, v)
	case reflect.Interface: // free-form (response_format.schema): any YAML value
		if x, ok := d.freeform(n, path); ok {
			v.Set(reflect.ValueOf(&x).Elem())
		}
	case reflect.String:
		s, ok := scalarText(n)
		if !ok {
			d.add(SeverityError, at, path, "found %s; accepted: text", describe(n))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			d.add(SeverityError, at, path, "found %s; accepted: true or false", describe(n))
			return
		}
		v.SetBool(b.Value)
	case reflect.Int, reflect.Uint64:
		f, ok := number(n)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			d.add(SeverityError, at, path, "found %s; accepted: a whole number", describe(n))
			return
		}
		if v.Kind() == reflect.Uint64 {
			if f < 0 {
				d.add(SeverityError, at, path, "found %s; accepted: a whole number ≥ 0", describe(n))
				return
			}
			v.SetUint(uint64(f))
			return
		}
		v.SetInt(int64(f))
	case reflect.Float64:
		f, ok := number(n)
		if !ok {
			hint := ""
			if s, isText := scalarText(n); isText && strings.HasSuffix(strings.TrimSpace(s), "%") {
				hint = " (write a percentage as a fraction: 1% is 0.01)"
			}
			d.add(SeverityError, at, path, "found %s; accepted: a number%s", describe(n), hint)
			return
		}
		v.SetFloat(f)
	default:
		d.add(SeverityError, at, path, "cannot read a value here (internal type %s)", v.Type())
	}
}

// special decodes the types a scenario writes in forms of their own (a duration, a distribution, a
// nonce, a rate, output tokens); false for any other type.
func (d *decoder) special(n ast.Node, at position, path string, v reflect.Value, tag reflect.StructTag) bool {
	switch {
	case v.Type() == durationType:
		s, ok := scalarText(n)
		if !ok {
			d.add(SeverityError, at, path, "found %s; accepted: a duration such as 500ms, 30s, 3m or 1h", describe(n))
			return true
		}
		dur, err := parseDuration(s)
		if err != nil {
			d.add(SeverityError, at, path, "%v", err)
			return true
		}
		v.SetInt(int64(dur))
		return true
	case v.Type() == distType:
		dist := d.dist(n, path, tag.Get("unit") == "duration")
		dist.Limit, _ = strconv.ParseFloat(tag.Get("limit"), 64)
		v.Set(reflect.ValueOf(dist))
		return true
	case v.Type() == urlListType: // one URL, or a list of them
		if text, ok := scalarText(n); ok {
			v.Set(reflect.ValueOf(URLList{text}))
			return true
		}
		return false
	case v.Type() == nonceType: // true, false or after_system
		if b, ok := n.(*ast.BoolNode); ok {
			if b.Value {
				v.SetString(string(NonceStart))
			}
			return true
		}
		if text, ok := scalarText(n); ok && text == string(NonceAfterSystem) {
			v.SetString(text)
			return true
		}
		d.add(SeverityError, at, path, "found %s; accepted: true (at the start of every request), after_system, or false", describe(n))
		return true
	case v.Type() == rateType: // a number, or a ramp {from, to, over}
		if _, isMap := mappingEntries(n); isMap {
			d.structure(n, path, v)
			return true
		}
		f, ok := number(n)
		if !ok {
			d.add(SeverityError, at, path, "found %s; accepted: requests per second (a number such as 20) or a ramp {from: 10, to: 50, over: 2m}; for as fast as the server answers, use load.mode concurrency (--concurrency N)", describe(n))
			return true
		}
		v.Set(reflect.ValueOf(ConstantRate(f)))
		return true
	case v.Type() == outputType: // from_file, a number or a distribution
		if text, ok := scalarText(n); ok && text == "from_file" {
			v.Set(reflect.ValueOf(OutputTokens{FromFile: true}))
			return true
		}
		dist := d.dist(n, path, false)
		dist.Limit = 1_000_000
		v.Set(reflect.ValueOf(OutputTokens{Dist: &dist}))
		return true
	}
	return false
}

func (d *decoder) structure(n ast.Node, path string, v reflect.Value) {
	entries, ok := mappingEntries(n)
	if !ok {
		d.add(SeverityError, posOf(n), path, "found %s; accepted: a mapping of keys (%s)", describe(n), strings.Join(yamlKeys(v.Type()), ", "))
		return
	}
	fields := map[string]int{}
	t := v.Type()
	for i := range t.NumField() {
		if name := yamlName(t.Field(i)); name != "" {
			fields[name] = i
		}
	}
	seen := map[string]bool{}
	for _, e := range entries {
		key := keyString(e.Key)
		kp := join(path, key)
		if seen[key] {
			d.add(SeverityError, posOf(e.Key), kp, "key %q appears twice; accepted: each key once", key)
			continue
		}
		seen[key] = true
		i, known := fields[key]
		if !known {
			keys := yamlKeys(t)
			msg := fmt.Sprintf("unknown key %q", key)
			if s := suggest(key, keys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.add(SeverityError, posOf(e.Key), kp, "%s; accepted here: %s", msg, strings.Join(keys, ", "))
			continue
		}
		d.keyPos[kp] = posOf(e.Key)
		d.value(e.Value, kp, v.Field(i), t.Field(i).Tag)
	}
}

func (d *decoder) mapping(n ast.Node, path string, v reflect.Value) {
	entries, ok := mappingEntries(n)
	if !ok {
		d.add(SeverityError, posOf(n), path, "found %s; accepted: a mapping of keys to values", describe(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	for _, e := range entries {
		key := keyString(e.Key)
		kp := join(path, key)
		if m.MapIndex(reflect.ValueOf(key)).IsValid() {
			d.add(SeverityError, posOf(e.Key), kp, "key %q appears twice; accepted: each key once", key)
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if elem.Kind() == reflect.Interface {
			// extra_body is free-form: any YAML value, sent as JSON.
			anyV, ok := d.freeform(e.Value, kp)
			if !ok {
				continue
			}
			elem.Set(reflect.ValueOf(&anyV).Elem())
		} else {
			d.value(e.Value, kp, elem, "")
		}
		d.pos[kp] = posOf(e.Value)
		m.SetMapIndex(reflect.ValueOf(key), elem)
	}
	v.Set(m)
}

// freeform reads any YAML value (bounded: aliases cannot blow it up) as plain Go values.
func (d *decoder) freeform(n ast.Node, path string) (any, bool) {
	if budget := maxExtraBodyNodes; !d.fits(n, &budget, 0) {
		d.add(SeverityError, posOf(n), path, "expands to more than %d values or %d levels (aliases?); accepted: a plain value", maxExtraBodyNodes, maxDepth)
		return nil, false
	}
	var anyV any
	if err := yaml.NodeToValue(d.resolve(n), &anyV); err != nil {
		d.add(SeverityError, posOf(n), path, "cannot read this value: %v", err)
		return nil, false
	}
	return anyV, true
}

// fits walks n with aliases expanded and reports whether it stays within budget nodes and maxDepth.
func (d *decoder) fits(n ast.Node, budget *int, depth int) bool {
	*budget--
	if *budget < 0 || depth > maxDepth {
		return false
	}
	n = d.resolve(n)
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, e := range v.Values {
			if !d.fits(e.Value, budget, depth+1) {
				return false
			}
		}
	case *ast.MappingValueNode:
		return d.fits(v.Value, budget, depth+1)
	case *ast.SequenceNode:
		for _, item := range v.Values {
			if !d.fits(item, budget, depth+1) {
				return false
			}
		}
	}
	return true
}

var distKeys = []string{"dist", "min", "max", "mean", "sigma", "value"}

func (d *decoder) dist(n ast.Node, path string, seconds bool) Dist {
	out := Dist{Kind: DistUniform, Seconds: seconds}
	what := "a number"
	if seconds {
		what = "a duration such as 2s"
	}
	read := func(n ast.Node, p string) (float64, bool) {
		if seconds {
			s, ok := scalarText(n)
			if !ok {
				d.add(SeverityError, posOf(n), p, "found %s; accepted: %s", describe(n), what)
				return 0, false
			}
			dur, err := parseDuration(s)
			if err != nil {
				d.add(SeverityError, posOf(n), p, "%v", err)
				return 0, false
			}
			return dur.Seconds(), true
		}
		f, ok := number(n)
		if !ok {
			d.add(SeverityError, posOf(n), p, "found %s; accepted: %s", describe(n), what)
		}
		return f, ok
	}
	entries, isMap := mappingEntries(n)
	if !isMap {
		// A bare scalar is a constant: `turns: 3`, `think_time: 2s`.
		if v, ok := read(n, path); ok {
			out.Kind, out.Value, out.HasValue = DistConstant, v, true
		}
		return out
	}
	seen := map[string]bool{}
	for _, e := range entries {
		key := keyString(e.Key)
		kp := join(path, key)
		d.pos[kp] = posOf(e.Value)
		if seen[key] {
			d.add(SeverityError, posOf(e.Key), kp, "key %q appears twice; accepted: each key once", key)
			continue
		}
		seen[key] = true
		val := d.resolve(e.Value)
		switch key {
		case "dist":
			s, ok := scalarText(val)
			if !ok {
				d.add(SeverityError, posOf(val), kp, "found %s; accepted: uniform, lognormal, exponential, constant", describe(val))
				continue
			}
			out.Kind = s
		case "min":
			out.Min, out.HasMin = read(val, kp)
		case "max":
			out.Max, out.HasMax = read(val, kp)
		case "mean":
			out.Mean, out.HasMean = read(val, kp)
		case "value":
			out.Value, out.HasValue = read(val, kp)
		case "sigma":
			f, ok := number(val)
			if !ok {
				d.add(SeverityError, posOf(val), kp, "found %s; accepted: a number > 0 (the standard deviation of ln X)", describe(val))
			}
			out.Sigma, out.HasSigma = f, ok
		default:
			msg := fmt.Sprintf("unknown key %q", key)
			if s := suggest(key, distKeys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.add(SeverityError, posOf(e.Key), kp, "%s; accepted in a distribution: %s", msg, strings.Join(distKeys, ", "))
		}
	}
	if out.Kind == DistLognormal && !out.HasSigma {
		out.Sigma, out.HasSigma = DefaultSigma, true
	}
	return out
}

// scalarText is the text of a scalar as written (numbers and booleans included).
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value, true
	}
	return "", false
}

func number(n ast.Node) (float64, bool) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.FloatNode:
		return v.Value, true
	case *ast.StringNode:
		// YAML 1.1 reads 5e9 (no dot) as text; a reader of the file sees a number, so do we.
		if v.Token != nil && v.Token.Type == token.StringType {
			if f, err := strconv.ParseFloat(v.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, true
			}
		}
	}
	return 0, false
}

// describe says what a node is, for "found ..." messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		return strconv.Quote(v.Value)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.IntegerNode, *ast.FloatNode:
		return "the number " + v.GetToken().Value
	case *ast.BoolNode:
		return "the boolean " + v.GetToken().Value
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "nothing"
	case *ast.AliasNode:
		return "an alias to an unknown anchor"
	}
	return "a " + n.Type().String()
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if n := yamlName(t.Field(i)); n != "" {
			keys = append(keys, n)
		}
	}
	sort.Strings(keys)
	return keys
}
