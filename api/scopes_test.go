package api

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// routeLine is a route of api.go with the scope its comment names.
var routeLine = regexp.MustCompile(`r\.(Get|Post|Patch|Delete)\("([^"]+)", s\.\w+\)(?:\s*// (\S+))?`)

// Every project route says in api.go which scope it checks, and that is
// the scope it checks: a key with every other scope is refused with 403
// permission_denied before anything of the request is looked at (the
// ids are made up), and a key with that scope alone is not refused for
// want of a scope.
func TestRouteScopes(t *testing.T) {
	src, err := os.ReadFile("api.go")
	if err != nil {
		t.Fatal(err)
	}
	_, project, ok := strings.Cut(string(src), `r.Route("/v1/projects/{project_id}"`)
	if !ok {
		t.Fatal("api.go has no project routes")
	}
	e := newEnv(t, Config{})
	key := func(scopes []string) string {
		_, token, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "k", scopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	fill := strings.NewReplacer("{inbox_id}", "ibx_x", "{thread_id}", "thd_x", "{message_id}", "msg_x",
		"{attachment_id}", "att_x", "{approval_id}", "apr_x", "{webhook_id}", "whk_x", "{delivery_id}", "dlv_x", "{key_id}", "key_x")
	routes := routeLine.FindAllStringSubmatch(project, -1)
	if len(routes) < 30 {
		t.Fatalf("found %d project routes in api.go", len(routes))
	}
	for _, m := range routes {
		method, path, scope := strings.ToUpper(m[1]), e.path("%s", fill.Replace(m[2])), m[3]
		if !slices.Contains(store.AllScopes(), scope) {
			t.Errorf("%s %s: the comment names %q, not a scope", method, m[2], scope)
			continue
		}
		others := slices.DeleteFunc(store.AllScopes(), func(s string) bool { return s == scope })
		r := e.do(key(others), method, path, "{}")
		if r.status != http.StatusForbidden || !strings.Contains(string(r.body), `"permission_denied"`) {
			t.Errorf("%s %s without %s: %d %s", method, m[2], scope, r.status, r.body)
		}
		if r := e.do(key([]string{scope}), method, path, "{}"); r.status == http.StatusForbidden {
			t.Errorf("%s %s with %s alone: %d %s", method, m[2], scope, r.status, r.body)
		}
	}
}
