// Package domain is kino's core: its events, its aggregates and the
// decisions they make. It is pure: no I/O, no NATS, no HTTP, no clock and
// no id generator. It imports the standard library, ulid and a JSON decoder
// only; the time of a command, event ids and stream sequences come from the
// edge (eventstore).
//
// # Aggregates
//
// Each aggregate is a state type with Evolve and Decide, in a file named
// after it that also holds its event types, payloads and commands:
//
//	video.go       Video       an upload and its processing (PENDING, PROCESSING,
//	                           COMPLETED, FAILED), retry, playback policy
//	collection.go  Collection  an account's named group of videos and the
//	                           defaults of its new videos
//	account.go     Account     a tenant: its plan, API keys (their SHA-256 only)
//	                           and playback signing keys (their public halves)
//	webhook.go     Webhook     a subscription, and the outcome of each delivery
//	user.go        User        a person who logs in to the dashboard or /admin
//
// Beside them: event.go (the event envelope, the registry, Encode and
// Decode, Fold), errors.go (the error type), streams.go (every stream id and
// subject filter: events are stored under <aggregate>.<id>.<EventType>),
// playbackpolicy.go (the policy value that videos and collections share),
// plan.go (plans and their limits) and validate.go (slugs, names, filenames,
// ids).
//
// # From a command to events
//
// A command is a plain struct (AcceptUpload, RenameCollection, IssueKey).
// eventstore.Execute runs it against one aggregate instance:
//
//  1. it loads the instance's events and folds them into its state: Fold
//     applies Evolve to each event in turn, from the zero value;
//  2. Decide(cmd, now) checks the command against that state and returns the
//     payloads to record, none when the command changes nothing, or an
//     *Error;
//  3. it appends the payloads, expecting the stream's last sequence to be the
//     one it loaded; when another writer got there first, it starts over, a
//     bounded number of times.
//
// Evolve never fails: events are facts, and every rule lives in Decide. An
// aggregate whose decisions depend on a few event types only (Webhook) lists
// them in DecisionTypes, and Execute then loads the last of each instead of
// the whole history. An aggregate's tests need no store: given events, when
// a command, then payloads or an error kind (aggregate_test.go).
//
// # Event types and versions
//
// A Payload names its type and aggregate explicitly; nothing is derived by
// reflection. The registry in event.go lists every event type ever written,
// with its current schema version. It is append-only: a type string is in
// stored subjects forever, so it is never renamed or removed.
//
// Encode always writes a type's current version. A field added with
// omitempty, whose absence means what older events meant, needs no new
// version (UploadAccepted.PlaybackPolicy: absent is public). Any other
// change of shape bumps the version in the registry and adds an upcaster,
// a function from the body of version v to the body of version v+1. Decode
// lifts an old body through the upcasters one version at a time before
// decoding it, so Evolve and every reader see the current shape only;
// Event.Version still says what was written. A version newer than this kino
// knows, a version below 1, an unknown type or a missing upcaster is an
// error, never a zero value.
// WebhookSubscribed is the example: v1 held its secret in clear, v2 holds it
// sealed, and the v1 upcaster leaves the clear secret in Secret, since the
// domain holds no key to seal it with.
// A schema version cannot be rolled back: a kino older than an event's
// version refuses it (as a Refused, below) and goes on without it, so its
// read models miss what that event says.
//
// testdata/events holds a frozen copy of every version of every type
// (<Type>.v<N>.json); fixtures_test.go decodes them all, so a change that
// would break a stored stream fails there. Fixtures are never edited: a new
// version adds a file; upcast_internal_test.go runs the upcasting path
// through a made-up v2. DecodeAs is the fast path for bodies at their type's
// current version, exactly as Encode writes them; it gives what Decode gives
// for every body. A stored message that cannot be decoded, or whose body
// names another subject than its own, reaches readers as a Refused, which
// they skip.
//
// # Errors
//
// Every failure is an *Error: the operation, a Kind, a message safe to show
// a client, and the wrapped cause. E and Wrap build one; KindOf, MessageOf
// and IsKind read it through any wrapping. transport/httpapi maps each kind
// to an HTTP status in one table.
//
//	 0 Other                unclassified; treated as Internal
//	 1 Invalid              malformed, or breaks a rule (400)
//	 2 NotFound             does not exist, or belongs to someone else (404)
//	 3 Conflict             the state changed, or already exists (409)
//	 4 Forbidden            the caller may not do this (404: never say what
//	                        another account holds)
//	 5 TooLarge             the input (a file) is bigger than allowed (413)
//	 6 Unsupported          an input type kino does not handle (415)
//	 7 Internal             kino's fault (500)
//	 8 Unauthenticated      no credentials (401)
//	 9 BadCredentials       unknown, revoked or wrong credentials (401)
//	10 Denied               known caller, not allowed (403)
//	11 RateLimited          too much, too fast (429)
//	12 Unavailable          cannot take this now: a cap, a part or NATS not
//	                        answering (503)
//	13 Timeout              the client took too long (408)
//	14 InsufficientStorage  no room to store the input (507)
//	15 NotAllowed           method not allowed on the path (405)
//	16 RequestTooLarge      a request body, not a file, too big (413)
//	17 Unsatisfiable        a Range refused (416)
//	18 Gone                 existed, and has expired (410)
//	19 PreconditionFailed   a protocol precondition does not hold (412)
//	20 ChecksumMismatch     data and its checksum differ (tus: 460)
//	21 LoginFailed          email and password match no user (401)
//	22 LoginRequired        no session, or one that ended (401)
//
// Kinds are append-only like event types: a number never changes meaning,
// and a new kind goes at the end (errors_test.go pins every number).
package domain
