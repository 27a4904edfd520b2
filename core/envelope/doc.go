// Package envelope encrypts message payloads of queues with encryptionEnabled, in the
// envelope format Queen clients and brokers share:
//
//	{"encrypted":"<base64 ciphertext>","iv":"<base64 of 16 random bytes>","authTag":"<base64 of the 16-byte GCM tag>"}
//
// The cipher is AES-256-GCM with the first 12 bytes of the 16-byte IV as nonce (the
// remaining 4 bytes are carried for compatibility and ignored). The key is the 32 bytes
// of QUEEN_ENCRYPTION_KEY (64 hex characters). The plaintext is the payload's JSON bytes
// exactly as pushed, so Open returns them unchanged.
package envelope
