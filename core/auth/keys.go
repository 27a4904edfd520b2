package auth

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// family is the kind of key an algorithm verifies with.
type family uint8

const (
	familyHMAC family = iota + 1
	familyRSA
	familyEd25519
)

// algorithms are the seven accepted JWT algorithms, by their exact header spelling.
var algorithms = map[string]family{
	"HS256": familyHMAC, "HS384": familyHMAC, "HS512": familyHMAC,
	"RS256": familyRSA, "RS384": familyRSA, "RS512": familyRSA,
	"EdDSA": familyEd25519,
}

// accepted returns the header algorithms a configured algorithm (any case) accepts:
// itself, RS384 and RS512 besides RS256 (as Queen's reference does), all seven for auto.
func accepted(configured string) (map[string]bool, error) {
	if strings.EqualFold(configured, "auto") {
		out := make(map[string]bool, len(algorithms))
		for a := range algorithms {
			out[a] = true
		}
		return out, nil
	}
	for a := range algorithms {
		if !strings.EqualFold(a, configured) {
			continue
		}
		if a == "RS256" {
			return map[string]bool{"RS256": true, "RS384": true, "RS512": true}, nil
		}
		return map[string]bool{a: true}, nil
	}
	return nil, fmt.Errorf("%w %q: want HS256, HS384, HS512, RS256, RS384, RS512, EdDSA or auto", errUnknownAlgorithm, configured)
}

// familyOfKey is the family a public key verifies for (0: none we support).
func familyOfKey(k crypto.PublicKey) family {
	switch k.(type) {
	case *rsa.PublicKey:
		return familyRSA
	case ed25519.PublicKey:
		return familyEd25519
	}
	return 0
}

// parsePublicKey reads a PEM public key: PKIX ("PUBLIC KEY", RSA or Ed25519), PKCS #1
// ("RSA PUBLIC KEY") or the key of a certificate. Line breaks written as the two
// characters \n (how a PEM often reaches an environment variable) are accepted.
func parsePublicKey(s string) (crypto.PublicKey, error) {
	if !strings.Contains(s, "\n") {
		s = strings.ReplaceAll(s, `\n`, "\n")
	}
	block, _ := pem.Decode([]byte(strings.TrimSpace(s)))
	if block == nil {
		return nil, errors.New("public key: no PEM block found")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("public key: PEM block %q: want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	if familyOfKey(key) == 0 {
		return nil, fmt.Errorf("public key: a %T: want an RSA or Ed25519 key", key)
	}
	return key, nil
}
