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
	aead cipher.AEAD
}

// New returns a Sealer for a 32-byte AES-256 key.
func New(key []byte) (*Sealer, error) {
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
	return &Sealer{aead: aead}, nil
}

type wire struct {
	Encrypted string `json:"encrypted"`
	IV        string `json:"iv"`
	AuthTag   string `json:"authTag"`
}

// Seal encrypts plaintext into an envelope.
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

// Open decrypts an envelope back to the original payload bytes.
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
	pt, err := s.aead.Open(nil, iv[:12], append(ct, tag...), nil)
	if err != nil {
		return nil, fmt.Errorf("envelope: open: %w", err)
	}
	return pt, nil
}
