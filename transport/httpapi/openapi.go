package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/kino-video/kino/docs"
)

// openAPIJSON loads docs/openapi.yaml (compiled in) and renders it as
// JSON. The tests load and validate the same document (every test
// request is checked against it), so an invalid one never ships.
func openAPIJSON() ([]byte, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	return json.Marshal(doc)
}

// openAPIDocument renders the document once per process, on its first
// request: loading and validating it costs more CPU than the rest of a
// server's start, and most processes (workers, CLI calls, tests) never
// serve it.
var openAPIDocument = sync.OnceValues(openAPIJSON)

// openAPI serves the API's OpenAPI 3.1 document.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	doc, err := openAPIDocument()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, err = w.Write(doc)
	return err
}
