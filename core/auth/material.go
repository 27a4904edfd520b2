package auth

import "strings"

// KeyMaterial says which kinds of key material a configuration holds, or which an
// algorithm can check its tokens with.
type KeyMaterial struct {
	Secret    bool // an HMAC secret: HS* tokens
	PublicKey bool // a PEM public key: RS* and EdDSA tokens
	KeySet    bool // a JSON Web Key Set: RS* and EdDSA tokens
}

// Usable returns the key material that can check the tokens a configured algorithm (any
// case) accepts: a secret for HS*, a public key or a key set for RS* and EdDSA, any of
// them for auto. HS* never uses a key set: a JWKS never supplies an HMAC secret. An
// unknown algorithm can use nothing.
func Usable(algorithm string) KeyMaterial {
	acc, err := accepted(algorithm)
	if err != nil {
		return KeyMaterial{}
	}
	var m KeyMaterial
	for alg := range acc {
		if algorithms[alg] == familyHMAC {
			m.Secret = true
		} else {
			m.PublicKey, m.KeySet = true, true
		}
	}
	return m
}

// MissingKeyError reports a configured algorithm with none of the key material it can
// check tokens with: the broker must not start with authentication on and no key.
type MissingKeyError struct {
	Algorithm string
	Want      KeyMaterial // any one of these would do
}

func (e *MissingKeyError) Error() string {
	var what string
	switch e.Want {
	case KeyMaterial{Secret: true}:
		what = "no secret"
	case KeyMaterial{PublicKey: true, KeySet: true}:
		what = "no public key and no key set"
	default:
		what = "no key material (" + e.Want.Either("a secret", "a public key", "a key set") + ")"
	}
	return "algorithm " + e.Algorithm + ": " + what
}

// Either lists the kinds m holds by the names given, in the order Secret, PublicKey,
// KeySet, as alternatives: "A", "A or B", "A, B or C". A configuration names them by its
// variables.
func (m KeyMaterial) Either(secret, publicKey, keySet string) string {
	var names []string
	for _, k := range []struct {
		on   bool
		name string
	}{{m.Secret, secret}, {m.PublicKey, publicKey}, {m.KeySet, keySet}} {
		if k.on {
			names = append(names, k.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// CheckKeyMaterial returns a *MissingKeyError when have holds none of the key material
// the configured algorithm can use (Usable), nil otherwise. It says nothing of whether a
// public key is one of the algorithm's family: New checks that when it parses the key.
func CheckKeyMaterial(algorithm string, have KeyMaterial) error {
	if _, err := accepted(algorithm); err != nil {
		return err
	}
	want := Usable(algorithm)
	if (want.Secret && have.Secret) || (want.PublicKey && have.PublicKey) || (want.KeySet && have.KeySet) {
		return nil
	}
	return &MissingKeyError{Algorithm: algorithm, Want: want}
}
