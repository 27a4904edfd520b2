package shard

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
)

// Max is the highest shard number an id can name.
const Max = 1<<16 - 1

// Of returns the shard that holds what id identifies: the shard field of a version 8
// id, 0 for any other UUID (shard 0 mints version 4 ids, as an unsharded broker does).
func Of(id [16]byte) int {
	if id[6]>>4 != 8 || id[8]&0xc0 != 0x80 {
		return 0
	}
	return int(binary.BigEndian.Uint16(id[0:2]))
}

// Mint returns a new random id naming shard n (0: a version 4 UUID).
func Mint(n int) ([16]byte, error) {
	var id [16]byte
	if n < 0 || n > Max {
		return id, fmt.Errorf("shard: mint an id for shard %d: shards are 0 to %d", n, Max)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return id, fmt.Errorf("shard: mint an id: %w", err)
	}
	id[8] = id[8]&0x3f | 0x80 // the RFC 9562 variant
	if n == 0 {
		id[6] = id[6]&0x0f | 0x40
		return id, nil
	}
	id[6] = id[6]&0x0f | 0x80
	binary.BigEndian.PutUint16(id[0:2], uint16(n))
	return id, nil
}

// OfID is the shard named by a partition or lease id in text form; an id that does not
// parse names shard 0, whose store refuses it as it always has.
func OfID(id string) int {
	u, err := uuid.Parse(id)
	if err != nil {
		return 0
	}
	return Of(u)
}
