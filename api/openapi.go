package api

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3.1 document of this API, written by hand;
// TestOpenAPIMatchesRouter keeps it in step with the router.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(openapiDoc)
}
