package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLogKeysAreTheDocumentedOnes collects the key of every slog attribute
// in the non-test Go code of every module and compares them with the key
// tables of docs/observability.md's Logs section, both ways: every key the
// code logs is documented, and every documented key is logged.
func TestLogKeysAreTheDocumentedOnes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	code := map[string][]string{} // key -> where it is logged
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			// readmecheck- directories are internal/readmecheck's README
			// blocks, written while it runs.
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || strings.HasPrefix(name, "readmecheck-")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		keys, bad := logKeys(fset, file)
		for _, b := range bad {
			t.Errorf("%s: a log key that is not a string literal, or a logger not named logger (the vocabulary cannot be checked)", rel(root, b))
		}
		for _, k := range keys {
			code[k.key] = append(code[k.key], rel(root, k.pos))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(code) == 0 {
		t.Fatal("no log key found in the code")
	}
	docPath := filepath.Join(root, "docs", "observability.md")
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	documented, err := documentedLogKeys(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", docPath, err)
	}
	for _, k := range slices.Sorted(maps.Keys(code)) {
		if !documented[k] {
			t.Errorf("log key %q is not in docs/observability.md's Logs tables; logged at %s", k, strings.Join(code[k], ", "))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(documented)) {
		if code[k] == nil {
			t.Errorf("docs/observability.md documents log key %q, which no code logs", k)
		}
	}
}

func rel(root string, pos token.Position) string {
	pos.Filename = strings.TrimPrefix(pos.Filename, root+string(os.PathSeparator))
	return pos.String()
}

// logKey is a key found in the code, with where.
type logKey struct {
	key string
	pos token.Position
}

// attrFuncs are log/slog's functions that make an Attr from a key.
var attrFuncs = map[string]bool{"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true}

// logMethods are *slog.Logger's methods that take attributes, with the
// number of arguments before them.
var logMethods = map[string]int{"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "LogAttrs": 3, "With": 0}

// logKeys returns the keys of file's slog attributes: the key argument of
// slog.String, slog.Any and the other Attr constructors, and each
// key-value pair's key given to a logger's Debug, Info, Warn, Error, Log
// (and their Context forms), LogAttrs and With. A logger is a receiver
// named logger or Logger, or ending so (c.logger, opts.Logger,
// PolicyLogger(...)); package-level calls are slog's alone. bad lists the
// key positions that hold something else than a string literal or an Attr
// made by slog, and the calls that log (a literal message, then a literal
// key) through a receiver not named so.
func logKeys(fset *token.FileSet, file *ast.File) (keys []logKey, bad []token.Position) {
	slogName := ""
	for _, imp := range file.Imports {
		if imp.Path.Value == `"log/slog"` {
			slogName = "slog"
			if imp.Name != nil {
				slogName = imp.Name.Name
			}
		}
	}
	isSlog := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && slogName != "" && id.Name == slogName
	}
	imported := map[string]bool{}
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imported[name] = true
	}
	isPackage := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && imported[id.Name]
	}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if isSlog(sel.X) && attrFuncs[sel.Sel.Name] && len(call.Args) > 0 {
			if s, ok := stringLit(call.Args[0]); ok {
				keys = append(keys, logKey{s, fset.Position(call.Args[0].Pos())})
			} else {
				bad = append(bad, fset.Position(call.Args[0].Pos()))
			}
			return true
		}
		skip, ok := logMethods[sel.Sel.Name]
		if !ok || len(call.Args) < skip {
			return true
		}
		if !isSlog(sel.X) && !isLogger(sel.X) {
			// A call that looks like logging (a literal message, then a
			// literal key) on a receiver not named as a logger would
			// escape the check: report it.
			if skip > 0 && !isPackage(sel.X) && len(call.Args) > skip {
				_, msg := stringLit(call.Args[skip-1])
				_, key := stringLit(call.Args[skip])
				if msg && key {
					bad = append(bad, fset.Position(call.Pos()))
				}
			}
			return true
		}
		for i := skip; i < len(call.Args); i++ {
			arg := call.Args[i]
			if s, ok := stringLit(arg); ok {
				keys = append(keys, logKey{s, fset.Position(arg.Pos())})
				i++ // its value
				continue
			}
			if c, ok := arg.(*ast.CallExpr); ok {
				if f, ok := c.Fun.(*ast.SelectorExpr); ok && isSlog(f.X) && attrFuncs[f.Sel.Name] {
					continue // an Attr: its key is collected above
				}
			}
			bad = append(bad, fset.Position(arg.Pos()))
			i++ // taken as a key: its value
		}
		return true
	})
	return keys, bad
}

// isLogger reports whether e names a logger: an identifier, a field or a
// call whose name ends in logger or Logger.
func isLogger(e ast.Expr) bool {
	if c, ok := e.(*ast.CallExpr); ok {
		e = c.Fun
	}
	name := ""
	switch x := e.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	}
	return strings.HasSuffix(strings.ToLower(name), "logger")
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// documentedLogKeys returns the keys of the tables in doc's "## Logs"
// section (up to the next level-2 heading): every `key` in the first cell
// of a row of a table whose first column is "key".
func documentedLogKeys(doc string) (map[string]bool, error) {
	_, section, ok := strings.Cut(doc, "\n## Logs\n")
	if !ok {
		return nil, fmt.Errorf("no \"## Logs\" section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	keys := map[string]bool{}
	inKeyTable := false
	for line := range strings.Lines(section) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inKeyTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		first := strings.TrimSpace(cells[0])
		switch {
		case first == "key":
			inKeyTable = true
		case !inKeyTable || strings.Trim(first, "- ") == "":
		default:
			parts := strings.Split(first, "`")
			if len(parts) < 3 {
				return nil, fmt.Errorf("row %q names no `key`", line)
			}
			for i := 1; i < len(parts); i += 2 {
				if keys[parts[i]] {
					return nil, fmt.Errorf("key %q has two rows", parts[i])
				}
				keys[parts[i]] = true
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key table in the Logs section")
	}
	return keys, nil
}

// The collector finds keys in every form the code uses, and refuses a key
// it cannot read.
func TestLogKeysCollector(t *testing.T) {
	src := `package p

import (
	"context"
	"log/slog"
	"net/http"
)

func f(c *conn, opts Options, w http.ResponseWriter, k string) {
	c.logger.Info("msg", "a", 1, "b", "not a key")
	opts.Logger.With("c", 2).Debug("msg")
	opts.PolicyLogger("x").Warn("msg", slog.String("d", "v"), "e", 3)
	c.cfg.logger.Log(context.Background(), slog.LevelWarn, "msg", "f", 4)
	c.logger.LogAttrs(context.Background(), slog.LevelInfo, "msg", slog.Group("g", slog.Int("h", 5)))
	slog.Error("msg", "i", 6)
	c.logger.ErrorContext(context.Background(), "msg", "j", 7)
	http.Error(w, "not", 500)
	t.Error("not a key")
	c.logger.Info("msg", k, 8)
	l := c.logger
	l.Warn("msg", "hidden", 9)
}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys, bad := logKeys(fset, file)
	var got []string
	for _, k := range keys {
		got = append(got, k.key)
	}
	slices.Sort(got)
	if want := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}; !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
	if len(bad) != 2 || bad[0].Line != 19 || bad[1].Line != 21 {
		t.Errorf("unreadable keys at %v, want the variable key on line 19 and the unnamed logger on line 21", bad)
	}
}

// The tables are read from the Logs section only, every backquoted key of
// a row's first cell.
func TestDocumentedLogKeys(t *testing.T) {
	doc := "# Doc\n\n| key | x |\n| --- | --- |\n| `outside` | |\n\n## Logs\n\ntext `notakey`\n\n" +
		"| key | on |\n| --- | --- |\n| `a` | x |\n| `b`, `c` | y |\n\n| field | JSON |\n| --- | --- |\n| `NotAKey` | |\n\n" +
		"### Sub\n\n| key | on |\n| --- | --- |\n| `d` | z |\n\n## Next\n\n| key | on |\n| --- | --- |\n| `after` | |\n"
	got, err := documentedLogKeys(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"a": true, "b": true, "c": true, "d": true}; !maps.Equal(got, want) {
		t.Errorf("documented keys %v, want %v", got, want)
	}
}
