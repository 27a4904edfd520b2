package queen

import "embed"

// docs holds the HTTP API's OpenAPI 3.1 document, embedded so that a broker serves the
// description of the routes it was built with (GET /openapi.yaml) and needs no file at
// run time. It is embedded here because go:embed cannot reach a parent directory from
// adapters/httpapi; ProvideHandler passes it on.
//
//go:embed docs/openapi.yaml
var docs embed.FS

// OpenAPI returns the embedded OpenAPI document (docs/openapi.yaml), a copy of its own:
// the e2e tests check every request and answer against exactly what the binary serves.
func OpenAPI() []byte {
	b, err := docs.ReadFile("docs/openapi.yaml")
	if err != nil {
		panic("queen: the embedded OpenAPI document is missing: " + err.Error()) // a build without it cannot happen
	}
	return b
}
