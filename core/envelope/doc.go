// Package envelope encrypts message payloads of queues with encryptionEnabled, in the
// envelope format Queen clients and brokers share:
//
//	{"encrypted":"<base64 ciphertext>","iv":"<base64 of 16 random bytes>","authTag":"<base64 of the 16-byte GCM tag>"}
//
// The cipher is AES-256-GCM with the first 12 bytes of the 16-byte IV as nonce (the
// remaining 4 bytes are carried for compatibility and ignored). The key is the 32 bytes
// of QUEEN_ENCRYPTION_KEY (64 hex characters). The plaintext is the payload's JSON bytes
// exactly as pushed, so Open returns them unchanged.
//
// # Invariants
//
//   - Every Seal draws a fresh random IV: a nonce never repeats under a key (with 96
//     random bits, a collision is negligible below billions of messages per key).
//   - Seal always uses the current key. Open tries the current key, then the old ones
//     in order (QUEEN_ENCRYPTION_KEY_OLD); GCM's tag authenticates, so a key that did not
//     seal an envelope fails instead of yielding garbage, and the first key that
//     authenticates is the right one. An envelope no key opens is ErrNoKeyOpens; one
//     that is not an envelope is ErrMalformed.
//
// # Key rotation
//
// Nothing is ever re-encrypted: stored envelopes keep the key that sealed them. To rotate
// from key A to key B without downtime, restart each broker with QUEEN_ENCRYPTION_KEY=B
// and QUEEN_ENCRYPTION_KEY_OLD=A: new payloads are sealed with B, and those sealed with A
// still open. Once every message sealed with A is gone (consumed and past retention, or
// expired), drop QUEEN_ENCRYPTION_KEY_OLD. With several brokers on one database, a broker
// still on A alone could not read what a rotated one sealed with B: first restart every
// broker with QUEEN_ENCRYPTION_KEY=A and QUEEN_ENCRYPTION_KEY_OLD=B (B opens everywhere,
// nothing is sealed with it yet), then with B and A as above.
package envelope
