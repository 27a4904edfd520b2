package envelope

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Sealer encrypts and decrypts payload envelopes. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD   // the current key: seals, and is tried first on open
	old  []cipher.AEAD // keys being rotated out: open only, tried in order after aead
}

// New returns a Sealer that seals with the 32-byte AES-256 key and opens envelopes sealed
// with key or with any of old, the keys being rotated out (QUEEN_ENCRYPTION_KEY_OLD):
// they decrypt what was sealed before the rotation and never seal.
func New(key []byte, old ...[]byte) (*Sealer, error) {
	aead, err := gcm(key)
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead}
	for i, k := range old {
		a, err := gcm(k)
		if err != nil {
			return nil, fmt.Errorf("old key %d: %w", i, err)
		}
		s.old = append(s.old, a)
	}
	return s, nil
}

func gcm(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("envelope: key is %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	return aead, nil
}

type wire struct {
	Encrypted string `json:"encrypted"`
	IV        string `json:"iv"`
	AuthTag   string `json:"authTag"`
}

// Seal encrypts plaintext into an envelope, always with the current key, under a fresh
// random IV (a GCM nonce must never repeat under one key).
func (s *Sealer) Seal(plaintext []byte) ([]byte, error) {
	var iv [16]byte
	if _, err := rand.Read(iv[:]); err != nil {
		return nil, fmt.Errorf("envelope: iv: %w", err)
	}
	sealed := s.aead.Seal(nil, iv[:12], plaintext, nil)
	ct, tag := sealed[:len(sealed)-16], sealed[len(sealed)-16:]
	return json.Marshal(wire{
		Encrypted: base64.StdEncoding.EncodeToString(ct),
		IV:        base64.StdEncoding.EncodeToString(iv[:]),
		AuthTag:   base64.StdEncoding.EncodeToString(tag),
	})
}

// ErrMalformed is wrapped by Open errors about the envelope itself.
var ErrMalformed = errors.New("envelope: malformed")

// ErrNoKeyOpens is wrapped by Open errors about a well-formed envelope that no
// configured key authenticates: it was sealed with another key, or altered.
var ErrNoKeyOpens = errors.New("envelope: no configured key opens it (sealed with another key, or altered)")

// Open decrypts an envelope back to the original payload bytes. It tries the current
// key, then the old ones: GCM authenticates, so a wrong key fails instead of returning
// garbage, and the first key that authenticates is the one that sealed it.
func (s *Sealer) Open(env []byte) ([]byte, error) {
	var w wire
	if err := json.Unmarshal(env, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	ct, err1 := base64.StdEncoding.DecodeString(w.Encrypted)
	iv, err2 := base64.StdEncoding.DecodeString(w.IV)
	tag, err3 := base64.StdEncoding.DecodeString(w.AuthTag)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(iv) < 12 || len(tag) != 16 {
		return nil, fmt.Errorf("%w: iv %d bytes, tag %d bytes", ErrMalformed, len(iv), len(tag))
	}
	sealed := append(ct, tag...)
	pt, err := s.aead.Open(nil, iv[:12], sealed, nil)
	for _, a := range s.old {
		if err == nil {
			break
		}
		pt, err = a.Open(nil, iv[:12], sealed, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: tried %d key(s): %v", ErrNoKeyOpens, 1+len(s.old), err)
	}
	return pt, nil
}
