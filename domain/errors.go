package domain

import (
	"errors"
	"fmt"
)

// Kind says what sort of failure an error is. Kinds are append-only: a
// kind's number never changes meaning.
type Kind uint8

const (
	Other       Kind = iota // unclassified; treated as internal
	Invalid                 // the request is malformed or breaks a rule
	NotFound                // the thing does not exist (or belongs to someone else)
	Conflict                // the state changed, or the thing already exists
	Forbidden               // the caller may not do this
	TooLarge                // the input is bigger than allowed
	Unsupported             // the input's type is not one we handle
	Internal                // our fault

	// Appended later (API keys, limits, outages, HTTP protocol errors); the
	// numbers above never move.
	Unauthenticated     // no credentials were given
	BadCredentials      // credentials were given but are unknown, revoked or wrong
	Denied              // the caller is known but may not do this (403; Forbidden answers 404)
	RateLimited         // the caller sent too much, too fast; retry later
	Unavailable         // the server cannot take this now (a global cap, a part not running)
	Timeout             // the client took too long (an upload body that stopped arriving)
	InsufficientStorage // no room left to store the input
	NotAllowed          // the method is not allowed on this path
	RequestTooLarge     // a request body (not an uploaded file) is bigger than allowed
	Unsatisfiable       // a Range request the server refuses to serve

	// Appended later (tus uploads); the numbers above never move.
	Gone               // the thing existed but has expired (410)
	PreconditionFailed // a protocol precondition of the request does not hold (412: Tus-Resumable)
	ChecksumMismatch   // the data does not match the checksum sent with it (tus: 460)
	// Appended later (people and sessions); the numbers above never move.
	LoginFailed   // an email and password that do not match a user (401)
	LoginRequired // no session, or one that ended (401)
)

func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case NotFound:
		return "not found"
	case Conflict:
		return "conflict"
	case Forbidden:
		return "forbidden"
	case TooLarge:
		return "too large"
	case Unsupported:
		return "unsupported"
	case Internal:
		return "internal"
	case Unauthenticated:
		return "unauthenticated"
	case BadCredentials:
		return "bad credentials"
	case Denied:
		return "denied"
	case RateLimited:
		return "rate limited"
	case Unavailable:
		return "unavailable"
	case Timeout:
		return "timeout"
	case InsufficientStorage:
		return "insufficient storage"
	case NotAllowed:
		return "not allowed"
	case RequestTooLarge:
		return "request too large"
	case Unsatisfiable:
		return "unsatisfiable"
	case Gone:
		return "gone"
	case PreconditionFailed:
		return "precondition failed"
	case ChecksumMismatch:
		return "checksum mismatch"
	case LoginFailed:
		return "login failed"
	case LoginRequired:
		return "login required"
	}
	return "other"
}

// Error is the one error type of kino: the operation that failed, the kind
// of failure, a message meant for the API user, and the wrapped cause.
type Error struct {
	Op      string // e.g. "upload video"
	Kind    Kind
	Message string // safe to show to a client
	Err     error  // cause, for logs; may be nil
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	} else if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Op == "" {
		return msg
	}
	return e.Op + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an Error. The message is shown to clients, so it must not leak
// internals; put those in the cause with Wrap.
func E(op string, kind Kind, format string, args ...any) *Error {
	return &Error{Op: op, Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a cause to an Error.
func Wrap(op string, kind Kind, err error, message string) *Error {
	return &Error{Op: op, Kind: kind, Message: message, Err: err}
}

// KindOf reports the kind of the outermost *Error in err's chain that has
// one, or Other.
func KindOf(err error) Kind {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return Other
		}
		if e.Kind != Other {
			return e.Kind
		}
		err = e.Err
	}
	return Other
}

// MessageOf returns the client-facing message of the first *Error in err's
// chain that carries one, or "".
func MessageOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Message != "" {
			return e.Message
		}
		err = e.Err
	}
	return ""
}

// IsKind reports whether err is of kind k.
func IsKind(err error, k Kind) bool { return KindOf(err) == k }
