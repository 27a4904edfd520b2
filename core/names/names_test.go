package names

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"plain", "orders", true},
		{"dotted", "billing.invoice.v2", true},
		{"unicode", "commandes-é-日本", true},
		{"spaces kept", " padded ", true},
		{"max length", strings.Repeat("a", 255), true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", 256), false},
		{"invalid utf8", "bad\xff", false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"del", "a\x7fb", false},
		{"c1 control", "a\u0085b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := Check(tt.in); (err == nil) != tt.ok {
				t.Fatalf("Check(%q) = %v, want ok=%v", tt.in, err, tt.ok)
			}
		})
	}
}

func TestCheckTransactionID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"empty", "", true},
		{"uuid", "0198e4c1-0000-7000-8000-000000000000", true},
		{"limit", strings.Repeat("x", 65535), true},
		{"over limit", strings.Repeat("x", 65536), false},
		{"tab", "a\tb", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := CheckTransactionID(tt.in); (err == nil) != tt.ok {
				t.Fatalf("CheckTransactionID = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
