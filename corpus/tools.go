package corpus

import (
	"os"
	"testing"
)

// SkipOrFail skips a test on a developer machine that lacks a tool .ci/run
// installs (node, an npm package), and fails it under CI=true, where the
// tool must be there: a missing tool never passes silently in CI.
func SkipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
