package httpapi

import "github.com/kino-video/kino/domain"

func errMissingKey() error {
	return domain.E("authenticate", domain.Unauthenticated, "Supply your API key in the Authorization header as a Bearer value: Authorization: Bearer <API_KEY>")
}

func errInvalidKey() error {
	return domain.E("authenticate", domain.BadCredentials, "The API key is invalid or has been revoked")
}

func errBadRequest(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

func errNotFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}
