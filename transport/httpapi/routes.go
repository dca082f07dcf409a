package httpapi

import (
	"net/http"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/tus"
)

// The routes of every protocol the server speaks, in one place: probes,
// the player and its media (/play, /assets, /cdn), browser sessions
// (/auth), the operator's /v1/admin, the /v1 API, and uploads (tus and
// direct upload URLs). Each protocol's handlers live in the files named
// after it; every handler returns an error that respond.Error answers.

// handlerFunc is a handler that returns its error for handle to answer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) routes() {
	r := s.router
	// No 301 to a cleaned path: /v1/videos/../x simply matches nothing (404).
	r.SkipClean(true)
	r.NotFoundHandler = s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return errNotFound("route " + r.URL.Path)
	})
	r.MethodNotAllowedHandler = s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return domain.E("", domain.NotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path)
	})
	// /cdn and the API's routes come first: mux tries routes in order,
	// and these are what players and clients call most (a segment every
	// few seconds, a poll of an upload every 2 s); no path matches one of
	// them and one of the routes below. Every /v1 route
	// but /v1/admin's, /v1/openapi.json and the tus routes open to direct
	// upload URLs is authenticated with an API key. (A mux subrouter
	// would answer 404 instead of 405 for a known path with the wrong
	// method.)
	r.PathPrefix("/cdn/").Handler(s.handle(s.cdn.Serve)).Methods(http.MethodGet, http.MethodHead, http.MethodOptions)
	route := func(path string, h func(http.ResponseWriter, *http.Request) error, method string) {
		r.Handle("/v1"+path, s.authenticate(s.handle(h))).Methods(method)
	}
	// A command decided on a new stream of its own, whose answer is the
	// command's result, reads nothing the account's pending writes could
	// change but its key: it waits only for those that may take access
	// away (awaitOwnWrites).
	ownStream := func(path string, h func(http.ResponseWriter, *http.Request) error, method string) {
		r.Handle("/v1"+path, s.authenticateAfter(settledWrites, s.handle(h))).Methods(method)
	}
	route("/videos", s.uploadVideo, http.MethodPost)
	route("/videos", s.listVideos, http.MethodGet)
	route("/videos/{id}", s.getVideo, http.MethodGet)
	route("/videos/{id}", s.deleteVideo, http.MethodDelete)
	route("/videos/{id}/events", s.videoEvents, http.MethodGet)
	route("/videos/{id}/retry", s.retryVideo, http.MethodPost)

	ownStream("/collections", s.createCollection, http.MethodPost)
	route("/collections", s.listCollections, http.MethodGet)
	route("/collections/{slug}", s.getCollection, http.MethodGet)
	route("/collections/{slug}", s.renameCollection, http.MethodPatch)
	route("/collections/{slug}", s.deleteCollection, http.MethodDelete)

	s.webhooks.Routes(route)

	route("/account", s.getAccount, http.MethodGet)

	s.uploadRoutes()

	route("/videos/{id}", s.updateVideo, http.MethodPatch)
	route("/videos/{id}/playback-tokens", s.issuePlaybackToken, http.MethodPost)
	s.captions.Routes(route)
	s.keys.Routes(route)

	mount := func(path string, h func(http.ResponseWriter, *http.Request) error, methods ...string) {
		r.Handle(path, s.handle(h)).Methods(methods...)
	}
	s.probes.Routes(mount)
	s.pages.Routes(mount)

	r.Handle("/auth/login", s.handle(s.login)).Methods(http.MethodPost)
	r.Handle("/auth/logout", s.handle(s.logout)).Methods(http.MethodPost)
	r.Handle("/auth/me", s.handle(s.me)).Methods(http.MethodGet)
	r.Handle("/auth/password", s.handle(s.setPassword)).Methods(http.MethodPost)

	s.adminRoutes()
	r.Handle("/v1/admin/users", s.operatorOnly(s.adminListUsers)).Methods(http.MethodGet)
	r.Handle("/v1/admin/users", s.operatorOnly(s.adminCreateUser)).Methods(http.MethodPost)
	r.Handle("/v1/openapi.json", s.handle(s.openAPI)).Methods(http.MethodGet)
}

// adminRoutes mounts the operator's endpoints (package admin) under
// /v1/admin, each behind operatorOnly (an operator's session, or kino's
// --admin-token as a Bearer value): the one place that names the
// operator's guard.
func (s *Server) adminRoutes() {
	s.admin.Routes(func(path string, h func(http.ResponseWriter, *http.Request) error, method string) {
		s.router.Handle("/v1/admin"+path, s.operatorOnly(h)).Methods(method)
	})
}

// uploadRoutes mounts the upload protocols (package tus): direct upload
// URLs, the caller's unfinished uploads, and tus, for API keys and for
// direct upload URLs (with CORS for browsers on any site). tus routes
// check the protocol's version before the API key.
func (s *Server) uploadRoutes() {
	s.tusUploads.Routes(func(path string, h func(http.ResponseWriter, *http.Request) error, method string, a tus.Access) {
		var handler http.Handler
		switch a {
		case tus.Open:
			handler = s.handle(h)
		case tus.Key:
			handler = s.authenticate(s.handle(h))
		case tus.KeyTus:
			handler = s.tusProtocol(s.authenticate(s.handle(h)))
		case tus.DirectTus:
			next := s.tusProtocol(s.handle(h))
			handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tus.DirectCORS(w.Header())
				next.ServeHTTP(w, r)
			})
		}
		s.router.Handle("/v1"+path, handler).Methods(method)
	})
}

// tusProtocol runs tus's version check (tus.Handler.Protocol) before
// next.
func (s *Server) tusProtocol(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.tusUploads.Protocol(w, r); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}
