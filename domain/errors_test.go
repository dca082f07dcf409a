package domain_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want domain.Kind
	}{
		{name: "nil", err: nil, want: domain.Other},
		{name: "plain error", err: errors.New("boom"), want: domain.Other},
		{name: "domain error", err: domain.E("op", domain.Invalid, "bad"), want: domain.Invalid},
		{name: "wrapped once", err: fmt.Errorf("load video: %w", domain.E("op", domain.NotFound, "gone")), want: domain.NotFound},
		{
			name: "wrapped twice",
			err:  fmt.Errorf("handler: %w", fmt.Errorf("load video: %w", domain.E("op", domain.TooLarge, "big"))),
			want: domain.TooLarge,
		},
		{name: "outer kind wins", err: domain.Wrap("append", domain.Conflict, domain.E("op", domain.Invalid, "bad"), ""), want: domain.Conflict},
		{name: "outer Other defers to the cause", err: domain.Wrap("append", domain.Other, domain.E("op", domain.Forbidden, "no"), ""), want: domain.Forbidden},
		{
			name: "outer Other defers through a plain wrap",
			err:  domain.Wrap("append", domain.Other, fmt.Errorf("store: %w", domain.E("op", domain.Unsupported, "no")), ""),
			want: domain.Unsupported,
		},
		{name: "Other all the way down", err: domain.Wrap("append", domain.Other, io.EOF, ""), want: domain.Other},
		{name: "Other with no cause", err: &domain.Error{Op: "op"}, want: domain.Other},
		{name: "internal", err: domain.Wrap("append", domain.Internal, io.EOF, "try again"), want: domain.Internal},
		{name: "joined", err: errors.Join(io.EOF, domain.E("op", domain.Conflict, "raced")), want: domain.Conflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domain.KindOf(tc.err); got != tc.want {
				t.Fatalf("KindOf(%v) = %q; want %q", tc.err, got, tc.want)
			}
			for k := domain.Other; k <= domain.Internal; k++ {
				if got := domain.IsKind(tc.err, k); got != (k == tc.want) {
					t.Fatalf("IsKind(%v, %q) = %v", tc.err, k, got)
				}
			}
		})
	}
}

func TestMessageOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "nil", err: nil, want: ""},
		{name: "plain error is not for clients", err: errors.New("disk on fire"), want: ""},
		{name: "domain error", err: domain.E("op", domain.Invalid, "slug %q is bad", "X"), want: `slug "X" is bad`},
		{name: "through fmt.Errorf", err: fmt.Errorf("create: %w", domain.E("op", domain.Conflict, "exists")), want: "exists"},
		{name: "outer message wins", err: domain.Wrap("op", domain.Internal, domain.E("inner", domain.Invalid, "inner message"), "outer message"), want: "outer message"},
		{name: "empty outer message falls through", err: domain.Wrap("op", domain.Conflict, domain.E("inner", domain.Invalid, "inner message"), ""), want: "inner message"},
		{name: "cause text is never the message", err: domain.Wrap("op", domain.Internal, errors.New("disk on fire"), ""), want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domain.MessageOf(tc.err); got != tc.want {
				t.Fatalf("MessageOf(%v) = %q; want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		name string
		err  *domain.Error
		want string
	}{
		{name: "op and message", err: domain.E("upload video", domain.Invalid, "file is empty"), want: "upload video: file is empty"},
		{name: "op, message and cause", err: domain.Wrap("append", domain.Internal, io.EOF, "store unavailable"), want: "append: store unavailable: EOF"},
		{name: "cause only", err: domain.Wrap("append", domain.Internal, io.EOF, ""), want: "append: EOF"},
		{name: "no op", err: domain.Wrap("", domain.Internal, io.EOF, "store unavailable"), want: "store unavailable: EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("Error() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestErrorsIsAs(t *testing.T) {
	inner := domain.Wrap("read stream", domain.Internal, io.ErrUnexpectedEOF, "")
	err := fmt.Errorf("load video %s: %w", videoID, inner)

	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatal("errors.Is does not reach the cause through *Error")
	}
	if !errors.Is(err, inner) {
		t.Fatal("errors.Is does not find the *Error itself")
	}
	if errors.Is(err, io.EOF) {
		t.Fatal("errors.Is matched an unrelated error")
	}
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatal("errors.As found no *domain.Error")
	}
	if de.Op != "read stream" || de.Kind != domain.Internal || de != inner {
		t.Fatalf("errors.As = %+v; want the wrapped error", de)
	}
	if errors.Unwrap(inner) != io.ErrUnexpectedEOF {
		t.Fatalf("Unwrap = %v; want the cause", errors.Unwrap(inner))
	}
	if errors.Unwrap(domain.E("op", domain.Invalid, "x")) != nil {
		t.Fatal("Unwrap of an error without a cause is not nil")
	}
}

func TestKindString(t *testing.T) {
	// Kinds are append-only: their numbers and names are part of the contract.
	tests := []struct {
		name string
		kind domain.Kind
		num  uint8
		want string
	}{
		{name: "other", kind: domain.Other, num: 0, want: "other"},
		{name: "invalid", kind: domain.Invalid, num: 1, want: "invalid"},
		{name: "not found", kind: domain.NotFound, num: 2, want: "not found"},
		{name: "conflict", kind: domain.Conflict, num: 3, want: "conflict"},
		{name: "forbidden", kind: domain.Forbidden, num: 4, want: "forbidden"},
		{name: "too large", kind: domain.TooLarge, num: 5, want: "too large"},
		{name: "unsupported", kind: domain.Unsupported, num: 6, want: "unsupported"},
		{name: "internal", kind: domain.Internal, num: 7, want: "internal"},
		{name: "unauthenticated", kind: domain.Unauthenticated, num: 8, want: "unauthenticated"},
		{name: "bad credentials", kind: domain.BadCredentials, num: 9, want: "bad credentials"},
		{name: "denied", kind: domain.Denied, num: 10, want: "denied"},
		{name: "rate limited", kind: domain.RateLimited, num: 11, want: "rate limited"},
		{name: "unavailable", kind: domain.Unavailable, num: 12, want: "unavailable"},
		{name: "timeout", kind: domain.Timeout, num: 13, want: "timeout"},
		{name: "insufficient storage", kind: domain.InsufficientStorage, num: 14, want: "insufficient storage"},
		{name: "not allowed", kind: domain.NotAllowed, num: 15, want: "not allowed"},
		{name: "request too large", kind: domain.RequestTooLarge, num: 16, want: "request too large"},
		{name: "unsatisfiable", kind: domain.Unsatisfiable, num: 17, want: "unsatisfiable"},
		{name: "gone", kind: domain.Gone, num: 18, want: "gone"},
		{name: "precondition failed", kind: domain.PreconditionFailed, num: 19, want: "precondition failed"},
		{name: "checksum mismatch", kind: domain.ChecksumMismatch, num: 20, want: "checksum mismatch"},
		{name: "login failed", kind: domain.LoginFailed, num: 21, want: "login failed"},
		{name: "login required", kind: domain.LoginRequired, num: 22, want: "login required"},
		{name: "unknown number", kind: domain.Kind(200), num: 200, want: "other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if uint8(tc.kind) != tc.num {
				t.Fatalf("%s = %d; want %d", tc.want, tc.kind, tc.num)
			}
			if got := tc.kind.String(); got != tc.want {
				t.Fatalf("Kind(%d).String() = %q; want %q", tc.num, got, tc.want)
			}
		})
	}
}
