package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestMainCatchesSignalsFirst: the root main.go (the cli tests run from the repository root): main's first statement subscribes plload to the stop signals
// (cli.CatchSignals), so that a signal in the process's first instants is plload's interrupt (exit
// 130, runner's TestInterruptAtEveryMoment) rather than the default action's kill.
func TestMainCatchesSignalsFirst(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "main" || fn.Recv != nil {
			continue
		}
		if len(fn.Body.List) > 0 {
			if es, ok := fn.Body.List[0].(*ast.ExprStmt); ok {
				if call, ok := es.X.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "CatchSignals" {
						if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "cli" {
							return
						}
					}
				}
			}
		}
		t.Fatal("main's first statement is not cli.CatchSignals(): a signal before it kills plload by the default action")
	}
	t.Fatal("main.go has no func main")
}
