package advisor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

// maxComplexity bounds the cyclomatic complexity of a function in this
// package, counted as gocyclo counts it.
const maxComplexity = 25

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

// No function of the package is more complex than maxComplexity: where a
// new format, framework or remedy goes stays easy to find.
func TestComplexity(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	type fnc struct {
		name string
		n    int
	}
	var over []fnc
	funcs := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				funcs++
				if n := cyclomatic(fn); n > maxComplexity {
					over = append(over, fnc{fset.Position(fn.Pos()).String() + " " + fn.Name.Name, n})
				}
			}
		}
	}
	sort.Slice(over, func(i, j int) bool { return over[i].n > over[j].n })
	for _, f := range over {
		t.Errorf("%s: cyclomatic complexity %d, more than %d", f.name, f.n, maxComplexity)
	}
	if funcs < 100 {
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

// Each framework of the table has a name and messages, and every number a
// real message of it states is one the table says it carries.
func TestFrameworkTable(t *testing.T) {
	for _, f := range frameworkTable {
		if f.name == "" || len(f.formats) == 0 {
			t.Errorf("%s: no name or no formats", f.key)
		}
	}
	for _, c := range realCases {
		fw, _ := c.want["framework"].(string)
		f := frameworks[fw]
		if f == nil {
			t.Errorf("%s: framework %q is not in the table", c.file, fw)
			continue
		}
		for k := range c.want {
			if isNumber(k) && !slices.Contains(f.carries, k) && !carriedByAnother(k) {
				t.Errorf("%s: %s states %s, which the table does not say it carries", c.file, fw, k)
			}
		}
	}
}

// carriedByAnother: a number that a message folded into another's fills
// in: the BFC allocator's statistics, printed after whichever allocator's
// warning (XLA's CUDA async allocator's too), and the device of a warning
// before the error.
func carriedByAnother(k string) bool {
	return k == "device" || slices.Contains([]string{"allowed_bytes", "allocated_by_framework_bytes", "peak_allocated_bytes",
		"num_allocs", "max_alloc_size_bytes", "largest_free_block_bytes"}, k)
}
