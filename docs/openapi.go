// Package docs holds kino's documentation; the OpenAPI document is also
// compiled in, so the server can publish it (GET /v1/openapi.json) and the
// end-to-end tests can check every request and response against it.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the contract of the v1 API.
//
//go:embed openapi.yaml
var OpenAPI []byte
