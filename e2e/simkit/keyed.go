package simkit

// Map is f of each of items, in order; empty, never nil, when items is,
// since a JSON list must be [] rather than null.
func Map[T, R any](items []T, f func(T) R) []R {
	out := make([]R, 0, len(items))
	for _, v := range items {
		out = append(out, f(v))
	}
	return out
}

// OAuthError is an OAuth 2.0 token endpoint's error answer (RFC 6749
// section 5.2): {"error": code, "error_description": desc}.
func OAuthError(status int, code, desc string) *Error {
	return &Error{Status: status, Body: map[string]string{"error": code, "error_description": desc}}
}
