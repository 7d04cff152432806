package web

import (
	"encoding/json"
	"net/http"

	"github.com/inboxd/inboxd/app"
)

// errCrossOrigin answers a state-changing request that a page of another
// origin made with the session cookie (http.CrossOriginProtection).
var errCrossOrigin = &app.Error{Code: app.EPermissionDenied, Message: "Cross-origin request refused: console requests come from the console's own page."}

// writeError is the one place an outcome of the console's own routes
// becomes an HTTP error, in the API's envelope; an error that is ours is
// logged here and answered "Internal error." with no detail.
func (c *Console) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := app.ErrorCode(err)
	if code == app.EInternal {
		c.log.Error("web: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, app.HTTPStatus(code), map[string]any{"error": map[string]string{"code": code, "message": app.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
