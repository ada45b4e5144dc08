// Package doccheck holds tests that keep the docs true to the code: every
// exported identifier of the repository documented, as the project's
// standards ask, and every slog key the code logs in the tables of
// docs/observability.md, which list no other.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedIdentifiersHaveDocComments parses every non-test Go file of
// every module in the repository and reports each exported type, function,
// method (on an exported type), constant and variable without a doc comment.
// A constant or variable inside a documented group counts as documented, as
// in go doc.
func TestExportedIdentifiersHaveDocComments(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var missing []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if file.Name.Name == "main" {
			return nil
		}
		for _, decl := range file.Decls {
			missing = append(missing, undocumented(fset, decl)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		rel := strings.TrimPrefix(m, root+string(os.PathSeparator))
		t.Errorf("%s has no doc comment", rel)
	}
}

func undocumented(fset *token.FileSet, decl ast.Decl) []string {
	var out []string
	report := func(pos token.Pos, what string) {
		out = append(out, fset.Position(pos).String()+": "+what)
	}
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || d.Doc != nil {
			return nil
		}
		if d.Recv != nil {
			recv := receiverType(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				return nil
			}
			report(d.Pos(), "method "+recv+"."+d.Name.Name)
			return out
		}
		report(d.Pos(), "func "+d.Name.Name)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
					report(s.Pos(), "type "+s.Name.Name)
				}
			case *ast.ValueSpec:
				if s.Doc != nil || d.Doc != nil || s.Comment != nil {
					continue
				}
				for _, n := range s.Names {
					if n.IsExported() {
						report(n.Pos(), d.Tok.String()+" "+n.Name)
					}
				}
			}
		}
	}
	return out
}

// receiverType names a method's receiver type without pointer or type
// parameters.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
