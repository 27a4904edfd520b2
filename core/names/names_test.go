package names

import (
	"strings"
	"testing"
	"unicode/utf8"
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

// FuzzCheck holds the name rule of docs/design.md "Decisions" (docs/reliability.md bad
// input #30): Check never panics, and it accepts exactly the names that are valid UTF-8,
// 1 to 255 bytes long and free of control characters (C0, DEL and C1), judged here rune
// by rune without Check's code.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"orders", "", "a", strings.Repeat("q", 255), strings.Repeat("q", 256), strings.Repeat("é", 127) + "x",
		strings.Repeat("é", 128), ".", "..", "a/b", "../../etc/x", "..%2f..%2f", "%00", "a\x00b", "a\nb", "a\tb",
		"a\x7fb", "a\u0085b", "a\u009fb", "a\u00a0b", "bad\xff", "p\xc3", "t\xed\xa0\x80", "\xef\xbf\xbd",
		"заказы", "注文", "🚀📦", "e\u0301", "\u00e9", "orders'); DROP TABLE queen.queues;--", "%", "_", "\u2028",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Check(s)
		valid := len(s) >= 1 && len(s) <= MaxBytes && utf8.ValidString(s)
		for _, r := range s {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
				valid = false
			}
		}
		if (err == nil) != valid {
			t.Fatalf("Check(%q) = %v, want valid=%v", s, err, valid)
		}
		if err != nil && err.Error() == "" {
			t.Fatalf("Check(%q) refused it without saying why", s)
		}
	})
}
