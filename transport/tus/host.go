package tus

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/diskspace"
)

// Caller is the account a request on an upload acts for, and its plan's
// limits.
type Caller struct {
	Account string
	Limits  domain.Limits
}

// Host is what the upload handler needs of the API server that mounts
// it: who a request is, the shared upload slots and disk guard, the
// stores' state, and the acceptance of a finished file as a video, the
// same as a multipart upload's.
type Host interface {
	// Caller is the account of a request the server authenticated (with
	// an API key) before handing it on.
	Caller(r *http.Request) Caller
	// Admit makes a request on a direct upload URL (of video id) the
	// account's: its plan's limits, and the URL's own rate budget. It
	// returns the request carrying its caller.
	Admit(w http.ResponseWriter, r *http.Request, account, id string) (Caller, *http.Request, error)
	// GuardCredentials runs check under the per-address limit on requests
	// without valid credentials.
	GuardCredentials(w http.ResponseWriter, r *http.Request, check func() error) error
	// Limits is the account's plan's limits now (NotFound: no account).
	Limits(account string) (domain.Limits, error)
	Decode(w http.ResponseWriter, r *http.Request, v any) error
	Logger(r *http.Request) *slog.Logger
	LoggerFrom(ctx context.Context) *slog.Logger
	// PublicBase is the API's public base, ending in /v1.
	PublicBase(r *http.Request) string

	// Writable refuses while the event store takes no writes;
	// StoresReady reports whether an acceptance may succeed now.
	Writable() error
	StoresReady(ctx context.Context) bool
	// Acquire takes an upload slot of pool (at most limit at once).
	Acquire(w http.ResponseWriter, pool string, limit int) (release func(), err error)
	// CheckStorage refuses an upload of n bytes that would take the
	// account past its plan's storage quota (l is its limits).
	CheckStorage(account string, l domain.Limits, n int64) error
	// CheckRoom refuses an upload of n bytes the disk has no room for;
	// ClaimRoom refuses a chunk of n bytes alike, and claims its room
	// until the claim is released; Disk guards the reserve as chunks are
	// written.
	CheckRoom(n int64) error
	ClaimRoom(n int64) (*diskspace.Claim, error)
	Disk() diskspace.Guard
	// StoreFailure answers a failure to store an upload (a write error
	// of its file, the cause of a StoreError).
	StoreFailure(w http.ResponseWriter, err error) error
	// Body reads a chunk's body, ending it when it stops or trickles.
	Body(w http.ResponseWriter, r *http.Request) Body

	// Collection checks that an upload's collection exists.
	Collection(ctx context.Context, account, slug string) error
	// Settings parses an upload's playbackPolicy and download (text
	// forms; nil: not set).
	Settings(policy, download *string) (Settings, error)
	// Sniff refuses (415) a file whose first bytes are not a video.
	Sniff(r io.Reader) error
	// Accept accepts a complete file as video f.ID, as a multipart
	// upload's, its failures to store the file marked StoreError;
	// Accepted reports whether the video exists already.
	Accept(ctx context.Context, f File) error
	Accepted(ctx context.Context, id, account string) (bool, error)
	// Refused reports whether err of Accept is a refusal of the upload
	// itself, which trying again does not change (not a failure to store
	// it).
	Refused(err error) bool
}

// File is a complete upload handed to Host.Accept.
type File struct {
	ID, Account, Collection, Filename, Ext string
	Size, MaxSize                          int64
	Path                                   string // the file on the local disk
	Settings                               Settings
}

// StoreError marks a failure to store an uploaded file (the media store,
// the disk), which Host.StoreFailure answers (it may set headers).
type StoreError struct{ Err error }

func (e StoreError) Error() string { return e.Err.Error() }
func (e StoreError) Unwrap() error { return e.Err }

// writeError is a failure to write a chunk to the server's own disk (the
// server's fault, unlike an interrupted body).
type writeError struct{ err error }

func (e *writeError) Error() string { return "store upload: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

func wrapWriteError(err error) error { return &writeError{err} }

// Body is a chunk's request body as the server reads it.
type Body interface {
	io.Reader
	// Done ends the watch of the body (past it, a takeover waits).
	Done()
	// Interrupt ends the read for a request that takes over.
	Interrupt()
	// Error is what the client is told of err, met reading the body;
	// kept says whether the bytes that arrived were kept.
	Error(w http.ResponseWriter, err error, kept bool) error
}

// DirectUploadStore keeps direct upload records by key (the token's hash).
// Create fails with a Conflict when the key exists; Get with NotFound when
// it does not; Update with a Conflict when the record changed since rev.
type DirectUploadStore interface {
	Create(ctx context.Context, key string, val []byte) error
	Get(ctx context.Context, key string) ([]byte, uint64, error)
	Update(ctx context.Context, key string, val []byte, rev uint64) error
}

// Media is what the handler needs of the media store: removing what an
// earlier try to accept an upload stored of its original.
type Media interface {
	Remove(ctx context.Context, id string) error
}

// Config wires the upload handler.
type Config struct {
	Store  *FileStore        // nil: resumable uploads are not enabled
	Direct DirectUploadStore // nil: direct upload URLs are not enabled
	Media  Media
	Host   Host
	Log    *slog.Logger
	Now    func() time.Time
	NewID  func() string
	// Expiry is how long an unfinished upload lives after its last bytes.
	Expiry time.Duration
	// BaseURL is the API's configured public base (ending in /v1), "":
	// Location is a path.
	BaseURL string
	// MaxSize is the largest file any plan takes (Tus-Max-Size).
	MaxSize int64
	// Accepting, in tests only, is called as a complete upload is
	// accepted.
	Accepting func(id string)
}

// Handler serves tus uploads under /v1/uploads/tus, the direct upload
// URLs, and GET /v1/uploads.
type Handler struct {
	cfg   Config
	host  Host
	store *FileStore
}

// NewHandler makes the upload handler.
func NewHandler(cfg Config) *Handler {
	return &Handler{cfg: cfg, host: cfg.Host, store: cfg.Store}
}

// Access is what a route asks of a request before its handler runs.
type Access int

const (
	// Open routes take any request (OPTIONS: discovery, preflight).
	Open Access = iota
	// Key routes take an account's API key (authenticated by the server).
	Key
	// KeyTus routes take an API key and speak tus (Protocol, outside the
	// key's check).
	KeyTus
	// DirectTus routes are a direct upload URL's: the token in the path
	// is the credential, answered with CORS for any site, and speak tus.
	DirectTus
)

// Routes hands each route (a path under /v1, its handler, its method,
// what it needs of a request) to mount.
func (h *Handler) Routes(mount func(path string, handle func(http.ResponseWriter, *http.Request) error, method string, a Access)) {
	mount("/uploads", h.createDirectUpload, http.MethodPost, Key)
	mount("/uploads", h.listUploads, http.MethodGet, Key)
	mount("/uploads/tus", h.tusOptions, http.MethodOptions, Open)
	mount("/uploads/tus", h.tusCreate, http.MethodPost, KeyTus)
	mount("/uploads/tus/{id}", h.tusOptions, http.MethodOptions, Open)
	mount("/uploads/tus/{id}", h.tusHead, http.MethodHead, KeyTus)
	mount("/uploads/tus/{id}", h.tusPatch, http.MethodPatch, KeyTus)
	mount("/uploads/tus/{id}", h.tusDelete, http.MethodDelete, KeyTus)

	mount("/uploads/tus/direct/{token}", h.directPreflight, http.MethodOptions, Open)
	mount("/uploads/tus/direct/{token}", h.directCreate, http.MethodPost, DirectTus)
	mount("/uploads/tus/direct/{token}/{id}", h.directPreflight, http.MethodOptions, Open)
	mount("/uploads/tus/direct/{token}/{id}", h.directUpload(h.headUpload), http.MethodHead, DirectTus)
	mount("/uploads/tus/direct/{token}/{id}", h.directUpload(h.patchUpload), http.MethodPatch, DirectTus)
	mount("/uploads/tus/direct/{token}/{id}", h.directUpload(h.deleteUpload), http.MethodDelete, DirectTus)
}

func errBadRequest(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

func errNotFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}

// writeTimeout bounds a write to the direct uploads' bucket.
const writeTimeout = 30 * time.Second
