package app

import "net/http"

// HTTPStatus is the HTTP status of an outcome with the error code code
// (SPEC §5.1), for the surfaces that answer over HTTP (the API, the
// console); 500 for internal and any code it does not know.
func HTTPStatus(code string) int {
	switch code {
	case EInvalidRequest, EInvalidCursor:
		return http.StatusBadRequest
	case EUnauthenticated:
		return http.StatusUnauthorized
	case EPermissionDenied:
		return http.StatusForbidden
	case ENotFound:
		return http.StatusNotFound
	case EIdempotencyConflict, EConflict:
		return http.StatusConflict
	case EIdempotencyExpired:
		return http.StatusUnprocessableEntity
	case EPayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case ERateLimited:
		return http.StatusTooManyRequests
	case ETemporarilyUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
