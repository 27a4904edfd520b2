package httpapi

import (
	"net/http"
	"strconv"
)

// openAPIContentType is the media type of YAML (RFC 9512).
var openAPIContentType = []string{"application/yaml"}

// handleOpenAPI is GET /openapi.yaml: the OpenAPI document the binary embeds,
// public like the probes, so that tools can read the API without a token.
func (a *api) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h["Content-Type"] = openAPIContentType
	h["Content-Length"] = []string{strconv.Itoa(len(a.opts.OpenAPI))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.opts.OpenAPI)
}
