package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxComplexity bounds the cyclomatic complexity of a function outside the
// tests, counted as gocyclo counts it; maxComplexityIn tightens it where a
// package is a table that grows (the OOM explainer: where a new format,
// framework or remedy goes stays easy to find).
const maxComplexity = 30

var maxComplexityIn = map[string]int{"advisor": 25}

// cyclomatic returns 1 + the if, for, range, case (not default) and
// select-case clauses and the && and || of fn, its function literals
// included (as gocyclo counts).
func cyclomatic(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// No function of the module (tests aside) is more complex than its limit:
// a function a reader can hold in their head is one they can change.
func TestComplexity(t *testing.T) {
	fset := token.NewFileSet()
	type fnc struct {
		name   string
		n, max int
	}
	var over []fnc
	funcs := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		limit := maxComplexity
		if l, ok := maxComplexityIn[filepath.Dir(path)]; ok {
			limit = l
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				funcs++
				if n := cyclomatic(fn); n > limit {
					over = append(over, fnc{fset.Position(fn.Pos()).String() + " " + fn.Name.Name, n, limit})
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(over, func(i, j int) bool { return over[i].n > over[j].n })
	for _, f := range over {
		t.Errorf("%s: cyclomatic complexity %d, more than %d", f.name, f.n, f.max)
	}
	if funcs < 1000 {
		t.Errorf("only %d functions read", funcs)
	}
}

// The count is gocyclo's on functions of known complexity.
func TestCyclomaticCounts(t *testing.T) {
	src := `package p
func one() {}
func five(a, b bool, xs []int) {
	if a && b {
	}
	for range xs {
	}
	switch {
	case a:
	default:
	}
}
func four(c chan int, a bool) {
	f := func() { if a || !a {} }
	select {
	case <-c:
	default:
	}
	f()
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"one": 1, "five": 5, "four": 4}
	for _, d := range f.Decls {
		fn := d.(*ast.FuncDecl)
		if got := cyclomatic(fn); got != want[fn.Name.Name] {
			t.Errorf("%s: %d, want %d", fn.Name.Name, got, want[fn.Name.Name])
		}
	}
}
