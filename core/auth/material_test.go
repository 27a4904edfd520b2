package auth

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestKeyMaterial: the one rule of what each algorithm checks its tokens with, which the
// configuration and New both apply.
func TestKeyMaterial(t *testing.T) {
	t.Parallel()
	secret := KeyMaterial{Secret: true}
	public := KeyMaterial{PublicKey: true, KeySet: true}
	all := KeyMaterial{Secret: true, PublicKey: true, KeySet: true}
	tests := []struct {
		alg     string
		usable  KeyMaterial
		have    KeyMaterial
		wantErr string // "" when the material is enough
	}{
		{"HS256", secret, KeyMaterial{Secret: true}, ""},
		{"hs384", secret, KeyMaterial{}, "algorithm hs384: no secret"},
		{"HS512", secret, KeyMaterial{PublicKey: true, KeySet: true}, "algorithm HS512: no secret"},
		{"RS256", public, KeyMaterial{KeySet: true}, ""},
		{"RS512", public, KeyMaterial{PublicKey: true}, ""},
		{"RS384", public, KeyMaterial{Secret: true}, "algorithm RS384: no public key and no key set"},
		{"EdDSA", public, KeyMaterial{}, "algorithm EdDSA: no public key and no key set"},
		{"auto", all, KeyMaterial{Secret: true}, ""},
		{"AUTO", all, KeyMaterial{KeySet: true}, ""},
		{"auto", all, KeyMaterial{}, "algorithm auto: no key material (a secret, a public key or a key set)"},
		{"ES256", KeyMaterial{}, all, "unknown algorithm"},
	}
	for _, tt := range tests {
		t.Run(tt.alg+"/"+tt.wantErr, func(t *testing.T) {
			t.Parallel()
			if got := Usable(tt.alg); got != tt.usable {
				t.Errorf("Usable(%q) = %+v, want %+v", tt.alg, got, tt.usable)
			}
			err := CheckKeyMaterial(tt.alg, tt.have)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckKeyMaterial(%q, %+v) = %v, want nil", tt.alg, tt.have, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckKeyMaterial(%q, %+v) = %v, want %q", tt.alg, tt.have, err, tt.wantErr)
			}
			var missing *MissingKeyError
			if errors.As(err, &missing) && missing.Want != tt.usable {
				t.Errorf("MissingKeyError.Want = %+v, want %+v", missing.Want, tt.usable)
			}
		})
	}
}

func TestEither(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		m    KeyMaterial
		want string
	}{
		{KeyMaterial{}, ""},
		{KeyMaterial{Secret: true}, "S"},
		{KeyMaterial{PublicKey: true, KeySet: true}, "P or K"},
		{KeyMaterial{Secret: true, PublicKey: true, KeySet: true}, "S, P or K"},
	} {
		if got := tt.m.Either("S", "P", "K"); got != tt.want {
			t.Errorf("%+v.Either = %q, want %q", tt.m, got, tt.want)
		}
	}
}

// TestShortSecretWarns: New accepts a secret shorter than MinSecretBytes and warns once.
func TestShortSecretWarns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		secret string
		warns  bool
	}{
		{strings.Repeat("s", MinSecretBytes-1), true},
		{strings.Repeat("s", MinSecretBytes), false},
	} {
		var buf bytes.Buffer
		if _, err := New(Options{Secret: tt.secret, Logger: slog.New(slog.NewTextHandler(&buf, nil))}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(buf.String(), "JWT_SECRET is shorter than 32 bytes"); got != map[bool]int{true: 1}[tt.warns] {
			t.Errorf("secret of %d bytes: %d warnings in %q", len(tt.secret), got, buf.String())
		}
	}
}
