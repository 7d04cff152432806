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

	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/smtp"
)

// allowedDeps is STYLE.md's import direction: message ← thread ← store ←
// app ← (api, mcp, web) ← main, with the workers (smtp, outbound, webhook)
// beside app on store; spool is a leaf beside message that only smtp (and
// main) use. A package may import only the inboxd packages listed for it;
// its tests also those in testDeps.
//
// One exception: app imports webhook for the webhook secret format alone
// (webhook.NewSecret, ValidateSecret; webhook signs with it). A format is
// a rule, not a setting: injected through app.Config, each surface or
// test that builds an App would have to wire it and could pass another.
// webhook imports only store, so this makes no cycle.
//
// The surfaces (api, mcp, web) reach data only through app: they import
// app (and message's pure text rules), never store, outbound or webhook.
var allowedDeps = map[string][]string{
	"message":  {},
	"spool":    {},
	"thread":   {"message"},
	"store":    {"message", "thread"},
	"smtp":     {"message", "thread", "store", "spool"},
	"outbound": {"message", "thread", "store"}, // the relay is the Relay it declares
	"webhook":  {"message", "thread", "store"},
	"app":      {"message", "thread", "store", "webhook"}, // webhook: the secret format (above)
	"api":      {"message", "app"},
	"mcp":      {"app"}, // transport only: every tool calls an operation
	"web":      {"message", "app"},
	"corpus":   {"message", "thread"},
}

// testDeps are what a package's tests may import beyond allowedDeps.
// corpus and internal/ (dnstest: a DNS server on loopback) are test-only
// helpers for any package's tests. outbound's tests drive the real
// smtp.Relay and smtp.Direct against a fake smarthost or MX (the true seam of
// outbound.Relay, which only main wires in production) with sends made
// through the real send path, app.Send. A surface's tests set up their
// fixtures in a real store and run the real workers beside it.
var testDeps = map[string][]string{
	"*":        {"corpus", "internal"},
	"outbound": {"smtp", "app"},
	"api":      {"store", "outbound", "webhook"},
	"mcp":      {"store"},
	"web":      {"store"},
}

// fileForbidden are imports a package may make but some of its files may
// not: webhook's signing and secret format (webhook.go) and its address
// checks (private.go) are rules any surface may use, with no store behind
// them; only the delivery worker reads the queue.
var fileForbidden = map[string][]string{
	"webhook/webhook.go": {"store"},
	"webhook/private.go": {"store"},
}

// smtp.Relay and smtp.Direct are outbound.Relay without either package
// importing the other.
var (
	_ outbound.Relay = (*smtp.Relay)(nil)
	_ outbound.Relay = (*smtp.Direct)(nil)
)

// importAllowed reports whether file, in package pkg, may import the
// inboxd package dep.
func importAllowed(pkg, file, dep string) bool {
	if slices.Contains(fileForbidden[file], dep) {
		return false
	}
	if dep == pkg || slices.Contains(allowedDeps[pkg], dep) {
		return true
	}
	test := strings.HasSuffix(file, "_test.go")
	return test && (slices.Contains(testDeps["*"], dep) || slices.Contains(testDeps[pkg], dep))
}

// The rules themselves, for the imports a refactoring removed: code that
// brings one back fails TestImportDirection.
func TestImportAllowed(t *testing.T) {
	for _, c := range []struct {
		pkg, file, dep string
		want           bool
	}{
		{"outbound", "outbound/worker.go", "smtp", false},
		{"outbound", "outbound/outbound_test.go", "smtp", true},
		{"smtp", "smtp/relay.go", "outbound", false},
		{"smtp", "smtp/server_test.go", "outbound", false},
		{"outbound", "outbound/worker.go", "store", true},
		{"store", "store/fuzz_test.go", "corpus", true},
		{"store", "store/store.go", "corpus", false},
		{"app", "app/app.go", "store", true},
		{"app", "app/app.go", "api", false},
		{"app", "app/app.go", "outbound", false},
		{"app", "app/webhook.go", "webhook", true},
		{"webhook", "webhook/worker.go", "app", false},
		{"store", "store/store.go", "app", false},
		{"api", "api/api.go", "app", true},
		{"api", "api/send.go", "store", false},
		{"api", "api/send.go", "outbound", false},
		{"api", "api/webhooks.go", "webhook", false},
		{"api", "api/api_test.go", "store", true},
		{"mcp", "mcp/mcp.go", "app", true},
		{"mcp", "mcp/mcp.go", "store", false},
		{"mcp", "mcp/mcp.go", "message", false},
		{"webhook", "webhook/webhook.go", "store", false},
		{"webhook", "webhook/worker.go", "store", true},
		{"app", "app/send.go", "smtp", false},
	} {
		if got := importAllowed(c.pkg, c.file, c.dep); got != c.want {
			t.Errorf("%s importing %s: allowed = %v, want %v", c.file, c.dep, got, c.want)
		}
	}
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
				if !importAllowed(pkg, f, dep) {
					t.Errorf("%s imports %s: %s may import only %v", f, path, pkg, allowed)
				}
			}
		}
	}
}
