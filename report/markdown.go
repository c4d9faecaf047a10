package report

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdownHTML renders the report's Markdown (the same text as report.md) as HTML for report.html:
// GitHub tables, lists, headings, code. report.html must fetch nothing and run nothing, and parts of
// the text come from outside (a server's error messages, a model name), so links and images are
// shown as their text, and raw HTML as escaped text — never a tag, an href or a src.
var markdownHTML = goldmark.New(
	goldmark.WithExtensions(extension.Table),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(inertRenderer{}, 100))),
)

// inertRenderer overrides goldmark's HTML renderer (priority 1000) for the nodes that could fetch
// or inject: links and images keep only their text, autolinks their label, raw HTML is escaped.
type inertRenderer struct{}

// RegisterFuncs registers the inert renderings.
func (inertRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	children := func(util.BufWriter, []byte, ast.Node, bool) (ast.WalkStatus, error) { return ast.WalkContinue, nil }
	reg.Register(ast.KindLink, children)
	reg.Register(ast.KindImage, children) // its children are the alt text
	reg.Register(ast.KindAutoLink, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			_, _ = w.Write(util.EscapeHTML(n.(*ast.AutoLink).Label(src)))
		}
		return ast.WalkContinue, nil
	})
	reg.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				seg := segs.At(i)
				_, _ = w.Write(util.EscapeHTML(seg.Value(src)))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	reg.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			_, _ = w.WriteString("<pre>")
			for i := range b.Lines().Len() {
				line := b.Lines().At(i)
				_, _ = w.Write(util.EscapeHTML(line.Value(src)))
			}
			return ast.WalkContinue, nil
		}
		if b.HasClosure() {
			_, _ = w.Write(util.EscapeHTML(b.ClosureLine.Value(src)))
		}
		_, _ = w.WriteString("</pre>\n")
		return ast.WalkContinue, nil
	})
}

// mdToHTML renders Markdown as an HTML fragment.
func mdToHTML(md string) (template.HTML, error) {
	var b bytes.Buffer
	if err := markdownHTML.Convert([]byte(md), &b); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil
}
