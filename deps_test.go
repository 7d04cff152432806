package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedDeps is STYLE.md's import direction: message ← thread ← store ←
// (smtp, outbound, webhook, api, mcp) ← main; spool is a leaf beside
// message that only smtp (and main) use. A package may import only the
// inboxd packages listed for it (tests included).
var allowedDeps = map[string][]string{
	"message":  {},
	"spool":    {},
	"thread":   {"message"},
	"store":    {"message", "thread"},
	"smtp":     {"message", "thread", "store", "spool"},
	"outbound": {"message", "thread", "store", "smtp"},
	"webhook":  {"message", "thread", "store"},
	"api":      {"message", "thread", "store", "outbound"},
	"mcp":      {"message", "thread", "store", "api"},
	"web":      {},
	"corpus":   {"message", "thread"},
}

func TestImportDirection(t *testing.T) {
	const module = "github.com/inboxd/inboxd/"
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "bench" {
			continue
		}
		pkg := e.Name()
		files, _ := filepath.Glob(filepath.Join(pkg, "*.go"))
		if len(files) == 0 {
			continue
		}
		allowed, ok := allowedDeps[pkg]
		if !ok {
			t.Errorf("package %s is not in allowedDeps: decide where it sits in STYLE.md's layering", pkg)
			continue
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				dep, internal := strings.CutPrefix(path, module)
				if !internal {
					continue
				}
				dep = strings.SplitN(dep, "/", 2)[0]
				// corpus is a test-only helper any package's tests may use.
				if dep == "corpus" && strings.HasSuffix(f, "_test.go") {
					continue
				}
				if dep != pkg && !slices.Contains(allowed, dep) {
					t.Errorf("%s imports %s: %s may import only %v", f, path, pkg, allowed)
				}
			}
		}
	}
}
