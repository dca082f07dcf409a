package httpapitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/kino-video/kino/docs"
)

// Contract checks requests and responses against docs/openapi.yaml, so
// the document cannot drift from the server: every test request sent
// through a Client runs it. Responses are always checked; requests when
// the server accepted them (the tests also send invalid requests on
// purpose, which the document rightly does not describe).
type Contract struct {
	router routers.Router
}

// loadedDocument is docs/openapi.yaml loaded and validated once per test
// binary: that costs more CPU than starting a server, and every server
// of a test binary checks against the same document.
var loadedDocument = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(loader.Context)
})

// NewContract checks against docs/openapi.yaml for a server whose root is
// baseURL (http://host:port, without /v1).
func NewContract(t testing.TB, baseURL string) *Contract {
	t.Helper()
	loaded, err := loadedDocument()
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	doc := *loaded // the router reads the servers; the rest is shared, read only
	doc.Servers = openapi3.Servers{{URL: baseURL + "/v1"}}
	router, err := gorillamux.NewRouter(&doc)
	if err != nil {
		t.Fatalf("docs/openapi.yaml routes: %v", err)
	}
	return &Contract{router: router}
}

// Check validates one exchange. body is the request body as sent (nil
// when there was none).
func (c *Contract) Check(t testing.TB, req *http.Request, body []byte, status int, header http.Header, respBody []byte) {
	t.Helper()
	if c == nil || !strings.HasPrefix(req.URL.Path, "/v1/") {
		return
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := c.router.FindRoute(vreq)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return // an unknown route or method: nothing to check against
		}
		t.Errorf("%s %s answered %d but docs/openapi.yaml has no such operation: %v", req.Method, req.URL.Path, status, err)
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: opts}
	if status/100 == 2 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s: the accepted request does not match docs/openapi.yaml: %v", req.Method, req.URL.Path, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: the %d response does not match docs/openapi.yaml: %v\n%s", req.Method, req.URL.Path, status, err, respBody)
	}
}
