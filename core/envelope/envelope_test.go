package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func testSealer(t *testing.T) *Sealer {
	t.Helper()
	s, err := New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	s := testSealer(t)
	for _, tt := range []struct{ name, payload string }{
		{"object", `{"orderId":91, "total":4200}`},
		{"null", `null`},
		{"empty object", `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, err := s.Seal([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]string
			if err := json.Unmarshal(env, &fields); err != nil || fields["encrypted"] == "" || fields["iv"] == "" || fields["authTag"] == "" {
				t.Fatalf("envelope %s lacks encrypted/iv/authTag (%v)", env, err)
			}
			got, err := s.Open(env)
			if err != nil || string(got) != tt.payload {
				t.Fatalf("Open = %q, %v; want %q", got, err, tt.payload)
			}
		})
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	s := testSealer(t)
	env, _ := s.Seal([]byte(`{"a":1}`))
	var w wire
	_ = json.Unmarshal(env, &w)
	w.AuthTag = "AAAAAAAAAAAAAAAAAAAAAA=="
	tampered, _ := json.Marshal(w)
	for _, tt := range []struct {
		name      string
		env       string
		malformed bool
	}{
		{"not json", `nope`, true},
		{"bad base64", `{"encrypted":"!!","iv":"AAAAAAAAAAAAAAAAAAAAAA==","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`, true},
		{"short iv", `{"encrypted":"","iv":"AAAA","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`, true},
		{"tampered tag", string(tampered), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Open([]byte(tt.env))
			if err == nil || errors.Is(err, ErrMalformed) != tt.malformed {
				t.Fatalf("Open error = %v, malformed want %v", err, tt.malformed)
			}
		})
	}
}

func TestNewRejectsWrongKeySize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		key, old []byte
	}{
		{"short current key", make([]byte, 16), nil},
		{"short old key", make([]byte, 32), make([]byte, 31)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var old [][]byte
			if tt.old != nil {
				old = append(old, tt.old)
			}
			if _, err := New(tt.key, old...); err == nil {
				t.Fatal("a key of the wrong size was accepted")
			}
		})
	}
}

// TestRotation: a Sealer with an old key opens what either key sealed and seals with the
// current one only; an envelope of an unrelated key opens with neither.
func TestRotation(t *testing.T) {
	t.Parallel()
	keyA, keyB, keyC := bytes.Repeat([]byte{0xa}, 32), bytes.Repeat([]byte{0xb}, 32), bytes.Repeat([]byte{0xc}, 32)
	sealer := func(key []byte, old ...[]byte) *Sealer {
		s, err := New(key, old...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	onlyA, onlyB, onlyC := sealer(keyA), sealer(keyB), sealer(keyC)
	rotated := sealer(keyB, keyA) // QUEEN_ENCRYPTION_KEY=B, QUEEN_ENCRYPTION_KEY_OLD=A
	const payload = `{"card":"4111"}`
	for _, tt := range []struct {
		name     string
		sealedBy *Sealer
		openedBy *Sealer
		opens    bool
	}{
		{"sealed with the old key opens after the rotation", onlyA, rotated, true},
		{"sealed with the new key opens after the rotation", onlyB, rotated, true},
		{"sealed after the rotation opens with the new key alone", rotated, onlyB, true},
		{"sealed after the rotation does not open with the old key alone", rotated, onlyA, false},
		{"sealed with an unrelated key opens with neither", onlyC, rotated, false},
		{"sealed with the old key does not open with the new key alone", onlyA, onlyB, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, err := tt.sealedBy.Seal([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.openedBy.Open(env)
			switch {
			case tt.opens && (err != nil || string(got) != payload):
				t.Fatalf("Open = %q, %v; want %q", got, err, payload)
			case !tt.opens && (err == nil || !errors.Is(err, ErrNoKeyOpens) || errors.Is(err, ErrMalformed)):
				t.Fatalf("Open = %q, %v; want ErrNoKeyOpens", got, err)
			}
		})
	}
}

// TestSealUsesAFreshIV: two seals of the same plaintext differ (a GCM nonce must never
// repeat under one key).
func TestSealUsesAFreshIV(t *testing.T) {
	t.Parallel()
	s := testSealer(t)
	a, _ := s.Seal([]byte(`1`))
	b, _ := s.Seal([]byte(`1`))
	var wa, wb wire
	if json.Unmarshal(a, &wa) != nil || json.Unmarshal(b, &wb) != nil || wa.IV == wb.IV || wa.Encrypted == wb.Encrypted {
		t.Fatalf("two seals of one plaintext share an IV or ciphertext: %s / %s", a, b)
	}
}
