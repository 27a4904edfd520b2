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
	if _, err := New(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
}
