package auth

import "strings"

// BearerToken extracts the token from an Authorization header value: "Bearer <jwt>"
// (scheme in any case), or a bare token (docs/api.md §3). ok is false when there is no token:
// an empty header, "Bearer" with nothing after it, or another scheme ("Basic ...": a
// JWT never contains a space, so two words that are not Bearer are not a token).
func BearerToken(header string) (token string, ok bool) {
	h := strings.TrimSpace(header)
	scheme, rest, spaced := strings.Cut(h, " ")
	switch {
	case !spaced:
		if strings.EqualFold(h, "Bearer") {
			return "", false
		}
		token = h
	case strings.EqualFold(scheme, "Bearer"):
		token = strings.TrimSpace(rest)
	default:
		return "", false
	}
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", false
	}
	return token, true
}
