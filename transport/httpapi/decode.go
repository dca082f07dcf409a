package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/kino-video/kino/domain"
)

// MaxJSONBody bounds the body of every JSON request.
const MaxJSONBody = 64 << 10

// decodeJSON reads one JSON object into v. Unknown fields are ignored;
// wrong types, malformed JSON, trailing data and oversize bodies are
// answered with a message that names the problem. The Content-Type is not
// enforced (curl -d sends a form type): the body must parse as JSON.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxJSONBody))
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return errBadRequest("request body must hold a single JSON object")
		}
		if _, err := dec.Token(); err != io.EOF {
			return errBadRequest("request body must hold a single JSON object")
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return domain.E("decode request", domain.RequestTooLarge, "request body must be at most %d bytes", MaxJSONBody)
	case errors.Is(err, io.EOF):
		return errBadRequest("request body must be a JSON object")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return errBadRequest("request body must be a JSON object")
		}
		return errBadRequest("field %s: expected %s, got a JSON %s", strconv.Quote(typeErr.Field), jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return errBadRequest("malformed JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errBadRequest("malformed JSON: unexpected end of body")
	}
	return errBadRequest("malformed JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "int", "int64", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	}
	return "an object"
}
