package auth

import (
	"strings"
	"testing"
)

func TestBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header, token string
		ok                  bool
	}{
		{"bearer", "Bearer a.b.c", "a.b.c", true},
		{"scheme in any case", "bEaReR a.b.c", "a.b.c", true},
		{"extra spaces", "  Bearer   a.b.c  ", "a.b.c", true},
		{"bare token", "a.b.c", "a.b.c", true},
		{"empty", "", "", false},
		{"spaces only", "   ", "", false},
		{"bearer alone", "Bearer", "", false},
		{"empty bearer token", "Bearer ", "", false},
		{"basic", "Basic dXNlcjpwYXNz", "", false},
		{"two words after bearer", "Bearer a.b.c d", "", false},
		{"tab inside", "Bearer\ta.b.c", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			token, ok := BearerToken(tt.header)
			if token != tt.token || ok != tt.ok {
				t.Fatalf("BearerToken(%q) = %q, %v; want %q, %v", tt.header, token, ok, tt.token, tt.ok)
			}
		})
	}
}

// FuzzBearer: any header value, however long or odd, gives a token without blanks or no
// token, and never panics.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"", "Bearer", "Bearer ", "Bearer a.b.c", "a.b.c", "Basic x", "bearer  x ", "\x00", "Bearer \xff\xfe",
		strings.Repeat("Bearer ", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok := BearerToken(header)
		if ok != (token != "") {
			t.Fatalf("ok %v with token %q", ok, token)
		}
		if strings.ContainsAny(token, " \t\r\n") {
			t.Fatalf("token %q has blanks", token)
		}
		if ok && !strings.Contains(header, token) {
			t.Fatalf("token %q is not part of the header %q", token, header)
		}
	})
}
