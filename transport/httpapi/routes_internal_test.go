package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/gorilla/mux"
)

// No route hides another: a path made from each route's template (its
// variables filled with an id, a slug or a name) reaches that route and
// not one mounted before it, whatever order the routes are mounted in.
func TestNoRouteHidesAnother(t *testing.T) {
	a := newTestAPI(t)
	vars := regexp.MustCompile(`\{[^}]+\}`)
	checked := 0
	err := a.s.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil || len(methods) == 0 {
			methods = []string{"GET"}
		}
		for _, fill := range []string{"01ARZ3NDEKTSV4RRFFQ69G5FAV", "my-slug", "en"} {
			path := vars.ReplaceAllString(tmpl, fill)
			req := httptest.NewRequest(methods[0], path, nil)
			if !route.Match(req, &mux.RouteMatch{}) {
				continue // not a value this route takes
			}
			var m mux.RouteMatch
			if !a.s.router.Match(req, &m) || m.Route == nil {
				t.Errorf("%s %s (route %s) matches no route", methods[0], path, tmpl)
				continue
			}
			if got, _ := m.Route.GetPathTemplate(); got != tmpl {
				t.Errorf("%s %s reaches %s, not its own route %s", methods[0], path, got, tmpl)
			}
			checked++
		}
		return nil
	})
	if err != nil || checked < 40 {
		t.Fatalf("walked the routes: %v, %d paths checked", err, checked)
	}
}

// The metrics name the route a request matched, not one a handler called
// through the router inside it (the dashboard's pages call the API so),
// and "unmatched" when the request itself matched none.
func TestRouteLabelIsTheRequestsOwn(t *testing.T) {
	router := mux.NewRouter()
	router.Use(routeLabel)
	inner := func(w http.ResponseWriter, r *http.Request) {
		req := r.Clone(r.Context())
		req.URL.Path = "/inner"
		router.ServeHTTP(httptest.NewRecorder(), req)
	}
	router.HandleFunc("/outer", inner)
	router.HandleFunc("/inner", func(http.ResponseWriter, *http.Request) {})
	router.NotFoundHandler = http.HandlerFunc(inner)
	for path, want := range map[string]string{"/outer": "/outer", "/nowhere": ""} {
		sw := &statusWriter{ResponseWriter: httptest.NewRecorder()}
		req := httptest.NewRequest("GET", path, nil)
		router.ServeHTTP(sw, req.WithContext(context.WithValue(req.Context(), ctxStatus, sw)))
		if sw.route != want {
			t.Errorf("GET %s labelled %q, want %q", path, sw.route, want)
		}
	}
}
