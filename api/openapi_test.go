package api

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/store"
)

// openapiMethods are the operation keys of an OpenAPI path item.
var openapiMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type openapiOp struct {
	method, path string
	op           map[string]any
}

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, openapiDoc) {
		t.Fatal("openapi.json differs from the embedded document (stale build?)")
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	return doc
}

func openapiOps(t *testing.T, doc map[string]any) []openapiOp {
	t.Helper()
	var ops []openapiOp
	for path, item := range doc["paths"].(map[string]any) {
		for _, m := range openapiMethods {
			if op, ok := item.(map[string]any)[m]; ok {
				ops = append(ops, openapiOp{strings.ToUpper(m), path, op.(map[string]any)})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// isPublic reports whether an operation overrides the global bearer
// requirement with an empty one.
func openapiPublic(op map[string]any) bool {
	sec, ok := op["security"].([]any)
	return ok && len(sec) == 0
}

// routerOps lists every (method, pattern) the router serves.
func openapiRouterOps(t *testing.T, h http.Handler) map[string]bool {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("handler is %T, not chi.Routes", h)
	}
	byPattern := map[string][]string{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasSuffix(route, "/*") { // chi's own catch-all of a sub-router
			return nil
		}
		byPattern[route] = append(byPattern[route], method)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A route registered with r.Handle answers every method; the document
	// would describe it as the GET it is meant for. (None today: /metrics
	// is GET-only.)
	anyMethod := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE"}
	out := map[string]bool{}
	for pattern, methods := range byPattern {
		all := true
		for _, m := range anyMethod {
			all = all && slices.Contains(methods, m)
		}
		if all {
			methods = []string{"GET"}
		}
		for _, m := range methods {
			out[m+" "+pattern] = true
		}
	}
	return out
}

func TestOpenAPIMatchesRouter(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newEnv(t, Config{})
	served := openapiRouterOps(t, e.srv.Config.Handler)
	documented := map[string]bool{}
	for _, o := range openapiOps(t, doc) {
		documented[o.method+" "+o.path] = true
	}
	var missing, extra []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.json:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("openapi.json documents routes the router does not serve:\n  %s", strings.Join(extra, "\n  "))
	}
	if len(served) == 0 {
		t.Fatal("chi.Walk found no routes")
	}
}

func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t, Config{})
	resp := e.get("", "/v1/openapi.json")
	if resp.status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json without a key: %d %s", resp.status, resp.body)
	}
	if mt, _, err := mime.ParseMediaType(resp.header.Get("Content-Type")); err != nil || mt != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", resp.header.Get("Content-Type"))
	}
	if !bytes.Equal(resp.body, openapiDoc) {
		t.Error("served document differs from openapi.json")
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.body, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Errorf("served document is not an OpenAPI 3.1.0 JSON document: %v", err)
	}
}

// TestOpenAPIScopes is the scope matrix: every authenticated operation
// states its scope (description and x-scope), and the route really enforces
// exactly that one — a key holding every other scope gets 403
// permission_denied. Public operations answer without a key; all others
// answer 401 without one.
func TestOpenAPIScopes(t *testing.T) {
	doc := loadOpenAPI(t)
	e := newEnv(t, Config{})
	ctx := context.Background()
	d := e.deliver(e.boot.Inbox.ID, rawMail("scope@example.com", "Scopes", "Hello."))
	ids := map[string]string{
		"project_id":    e.boot.ProjectID,
		"inbox_id":      e.boot.Inbox.ID,
		"thread_id":     d.ThreadID,
		"message_id":    d.MessageID,
		"attachment_id": "att_none", // the scope check comes before the lookup
		"key_id":        "key_none",
		"approval_id":   "apr_none", // likewise
		"webhook_id":    "whe_none", // likewise
		"delivery_id":   "dlv_none",
	}
	tokens := map[string]string{} // scope left out → token
	keyLacking := func(scope string) string {
		if tok, ok := tokens[scope]; ok {
			return tok
		}
		var scopes []string
		if scope != "*" { // "*": a key with no scope at all
			for _, s := range store.AllScopes() {
				if s != scope {
					scopes = append(scopes, s)
				}
			}
		}
		_, tok, err := e.db.CreateKey(ctx, e.boot.ProjectID, "without "+scope, scopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		tokens[scope] = tok
		return tok
	}

	for _, o := range openapiOps(t, doc) {
		path := o.path
		for name, v := range ids {
			path = strings.ReplaceAll(path, "{"+name+"}", v)
		}
		if strings.Contains(path, "{") {
			t.Errorf("%s %s: no test value for a path parameter", o.method, o.path)
			continue
		}
		body := ""
		if o.method == "POST" || o.method == "PATCH" {
			body = "{}"
		}
		scope, hasScope := o.op["x-scope"].(string)
		desc, _ := o.op["description"].(string)

		if openapiPublic(o.op) {
			if hasScope {
				t.Errorf("%s %s: public operation with x-scope %q", o.method, o.path, scope)
			}
			if r := e.do("", o.method, path, body); r.status != http.StatusOK {
				t.Errorf("%s %s is public but answers %d without a key", o.method, o.path, r.status)
			}
			continue
		}
		if r := e.do("", o.method, path, body); r.status != http.StatusUnauthorized || openapiErrCode(r) != "unauthenticated" {
			t.Errorf("%s %s without a key: %d %s, want 401 unauthenticated", o.method, o.path, r.status, r.body)
		}
		if !hasScope {
			// Only an operation any valid key may call goes without x-scope.
			if !strings.Contains(desc, "Scope: none") {
				t.Errorf("%s %s: no x-scope and no \"Scope: none\" in its description", o.method, o.path)
			}
			if r := e.do(keyLacking("*"), o.method, path, body); r.status != http.StatusOK {
				t.Errorf("%s %s has no x-scope but a key without scopes gets %d %s", o.method, o.path, r.status, r.body)
			}
			continue
		}
		if !slices.Contains(store.AllScopes(), scope) {
			t.Errorf("%s %s: x-scope %q is not a scope", o.method, o.path, scope)
			continue
		}
		if !strings.Contains(desc, "Scope: "+scope) {
			t.Errorf("%s %s: description does not state \"Scope: %s\"", o.method, o.path, scope)
		}
		r := e.do(keyLacking(scope), o.method, path, body)
		if r.status != http.StatusForbidden || openapiErrCode(r) != "permission_denied" || !strings.Contains(string(r.body), scope) {
			t.Errorf("%s %s with every scope but %s: %d %.200s, want 403 permission_denied naming %s",
				o.method, o.path, scope, r.status, r.body, scope)
		}
	}
}

func openapiErrCode(r response) string {
	var v struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &v)
	return v.Error.Code
}

// openapiResolver flattens a schema's $ref and allOf into its properties
// and required fields.
type openapiResolver struct {
	t       *testing.T
	schemas map[string]any
}

func (sr openapiResolver) deref(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		target, found := sr.schemas[name].(map[string]any)
		if !ok || !found {
			sr.t.Fatalf("unresolvable $ref %q", ref)
		}
		s = target
	}
}

func (sr openapiResolver) object(s map[string]any) (props map[string]map[string]any, required map[string]bool) {
	props, required = map[string]map[string]any{}, map[string]bool{}
	var walk func(s map[string]any)
	walk = func(s map[string]any) {
		s = sr.deref(s)
		for _, part := range openapiSlice(s["allOf"]) {
			walk(part.(map[string]any))
		}
		for name, p := range openapiMap(s["properties"]) {
			if _, ok := props[name]; ok { // an allOf part refining a property: keep the first
				continue
			}
			props[name] = p.(map[string]any)
		}
		for _, r := range openapiSlice(s["required"]) {
			required[r.(string)] = true
		}
	}
	walk(s)
	return props, required
}

func openapiSlice(v any) []any        { s, _ := v.([]any); return s }
func openapiMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func (sr openapiResolver) types(p map[string]any) []string {
	p = sr.deref(p)
	var out []string
	switch t := p["type"].(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, x := range t {
			out = append(out, x.(string))
		}
	}
	for _, alt := range openapiSlice(p["oneOf"]) {
		out = append(out, sr.types(alt.(map[string]any))...)
	}
	if _, ok := p["properties"]; ok && len(out) == 0 {
		out = append(out, "object")
	}
	return out
}

// jsonFields lists the JSON fields of a struct, embedded structs inlined.
func openapiJSONFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, openapiJSONFields(f.Type)...)
			continue
		}
		if tag := strings.Split(f.Tag.Get("json"), ",")[0]; tag != "" && tag != "-" {
			f.Name = tag
			out = append(out, f)
		}
	}
	return out
}

// TestOpenAPISchemasMatchObjects holds the component schemas to the Go
// objects the handlers encode: the same fields, all required (SPEC §5.1:
// every field always present), nullable exactly where the Go field is a
// pointer.
func TestOpenAPISchemasMatchObjects(t *testing.T) {
	doc := loadOpenAPI(t)
	sr := openapiResolver{t, doc["components"].(map[string]any)["schemas"].(map[string]any)}
	for name, v := range map[string]any{
		"Inbox": inboxJSON{}, "Key": keyJSON{}, "Thread": threadJSON{}, "Message": messageJSON{},
		"ThreadMessage": threadMessageJSON{}, "Address": addressJSON{}, "Recipient": recipientJSON{},
		"Attachment": attachmentJSON{}, "Approval": approvalJSON{}, "Draft": draftJSON{},
		"Webhook": webhookJSON{}, "WebhookWithSecret": webhookWithSecretJSON{}, "WebhookDelivery": webhookDeliveryJSON{},
		"WebhookDeliveryDetail": webhookDeliveryDetailJSON{}, "WebhookAttempt": webhookAttemptJSON{},
	} {
		s, ok := sr.schemas[name].(map[string]any)
		if !ok {
			t.Errorf("components/schemas has no %s", name)
			continue
		}
		props, required := sr.object(s)
		fields := openapiJSONFields(reflect.TypeOf(v))
		var goNames []string
		for _, f := range fields {
			goNames = append(goNames, f.Name)
			p, ok := props[f.Name]
			if !ok {
				t.Errorf("%s: field %s missing from the schema", name, f.Name)
				continue
			}
			if !required[f.Name] {
				t.Errorf("%s: field %s is not required", name, f.Name)
			}
			types := sr.types(p)
			nullable := slices.Contains(types, "null")
			kind := f.Type.Kind()
			if kind == reflect.Pointer {
				if !nullable {
					t.Errorf("%s: %s is a pointer but the schema does not allow null (%v)", name, f.Name, types)
				}
				kind = f.Type.Elem().Kind()
			} else if nullable && kind != reflect.Slice {
				t.Errorf("%s: %s can never be null but the schema allows it", name, f.Name)
			}
			want := map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Int64: "integer",
				reflect.Int: "integer", reflect.Slice: "array", reflect.Struct: "object", reflect.Map: "object"}[kind]
			if !slices.Contains(types, want) {
				t.Errorf("%s: %s is a Go %s; schema types %v lack %q", name, f.Name, kind, types, want)
			}
		}
		for p := range props {
			if !slices.Contains(goNames, p) {
				t.Errorf("%s: schema property %s is not a field of %T", name, p, v)
			}
		}
	}
}

// TestOpenAPIResponsesMatchSchemas checks the objects built inside
// handlers (not as named types) against their schemas, by their real
// responses: the same field names, no more, no fewer.
func TestOpenAPIResponsesMatchSchemas(t *testing.T) {
	doc := loadOpenAPI(t)
	sr := openapiResolver{t, doc["components"].(map[string]any)["schemas"].(map[string]any)}
	e := newEnv(t, Config{})
	d := e.deliver(e.boot.Inbox.ID, rawMail("shape@example.com", "Shape", "Hello."))
	check := func(schema string, r response, want int) map[string]any {
		t.Helper()
		if r.status != want {
			t.Fatalf("%s: status %d, want %d: %s", schema, r.status, want, r.body)
		}
		got := r.json(t)
		props, _ := sr.object(sr.schemas[schema].(map[string]any))
		var gotNames, wantNames []string
		for k := range got {
			gotNames = append(gotNames, k)
		}
		for k := range props {
			wantNames = append(wantNames, k)
		}
		sort.Strings(gotNames)
		sort.Strings(wantNames)
		if !slices.Equal(gotNames, wantNames) {
			t.Errorf("%s: response fields %v, schema %v", schema, gotNames, wantNames)
		}
		return got
	}
	msg := e.path("/inboxes/%s/messages/%s", e.boot.Inbox.ID, d.MessageID)
	check("Body", e.get(e.admin, msg+"/body"), http.StatusOK)
	check("Me", e.get(e.admin, "/v1/me"), http.StatusOK)
	check("Status", e.get("", "/healthz"), http.StatusOK)
	check("Status", e.get("", "/readyz"), http.StatusOK)
	check("ThreadMessageList", e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages", e.boot.Inbox.ID, d.ThreadID)), http.StatusOK)
	check("InboxList", e.get(e.admin, e.path("/inboxes")), http.StatusOK)
	created := check("KeyWithToken", e.do(e.admin, "POST", e.path("/keys"), `{"name":"k","scopes":["threads:read"]}`), http.StatusCreated)
	check("Revoked", e.do(e.admin, "DELETE", e.path("/keys/%s", created["id"]), ""), http.StatusOK)
	check("Deleted", e.do(e.admin, "DELETE", msg, ""), http.StatusOK)
	check("Error", e.get(e.admin, msg), http.StatusNotFound)

	// The send answers are built inline too.
	ib := e.boot.Inbox.ID
	send := e.path("/inboxes/%s/messages", ib)
	check("SendQueued", e.do(e.admin, "POST", send, `{"to":["a@example.com"],"text":"Hi"}`), http.StatusAccepted)
	if r := e.do(e.admin, "PATCH", e.path("/inboxes/%s", ib), `{"send_policy":"approve_all"}`); r.status != http.StatusOK {
		t.Fatalf("PATCH send_policy: %d %s", r.status, r.body)
	}
	held := check("SendApprovalRequired", e.do(e.admin, "POST", send, `{"to":["a@example.com"],"text":"Hi"}`), http.StatusAccepted)
	check("ApprovalList", e.get(e.admin, e.path("/inboxes/%s/approvals", ib)), http.StatusOK)
	apr := e.path("/inboxes/%s/approvals/%s", ib, held["approval_id"])
	check("Approval", e.do(e.admin, "POST", apr+"/approve", ""), http.StatusOK)
	check("Error", e.do(e.admin, "POST", apr+"/reject", `{"reason":"late"}`), http.StatusConflict)
	check("MessagesDeleted", e.do(e.admin, "DELETE", send, ""), http.StatusOK)
}
