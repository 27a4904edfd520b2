package names

import (
	"fmt"
	"unicode/utf8"
)

// MaxBytes is the longest name, in bytes.
const MaxBytes = 255

// Check returns nil when s is a valid name, else an error saying what is wrong with it
// (without repeating the name, which may be long or unprintable).
func Check(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("must not be empty")
	case len(s) > MaxBytes:
		return fmt.Errorf("is %d bytes, the limit is %d", len(s), MaxBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("is not valid UTF-8")
	}
	if i := controlAt(s); i >= 0 {
		return fmt.Errorf("contains a control character at byte %d", i)
	}
	return nil
}

// controlAt returns the byte index of the first control character (C0, DEL or C1), or -1.
func controlAt(s string) int {
	for i, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return i
		}
	}
	return -1
}

// MaxTransactionIDBytes is the longest transactionId accepted on push (docs/api.md §1).
const MaxTransactionIDBytes = 65535

// CheckTransactionID applies the transactionId rule: at most 65535 bytes, no control
// characters. The empty string is allowed (the broker substitutes the message id).
func CheckTransactionID(s string) error {
	if len(s) > MaxTransactionIDBytes {
		return fmt.Errorf("exceeds the %d-byte limit", MaxTransactionIDBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	if i := controlAt(s); i >= 0 {
		return fmt.Errorf("contains a control character at byte %d", i)
	}
	return nil
}
