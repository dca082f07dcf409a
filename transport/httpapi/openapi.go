package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/kino-video/kino/docs"
)

// openAPIJSON loads docs/openapi.yaml (compiled in) and renders it as
// JSON. A document that does not load or validate stops the server from
// starting: the contract is part of the program.
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

// openAPI serves the API's OpenAPI 3.1 document.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, err := w.Write(s.openapi)
	return err
}
