// Package segment packs the frames of one push segment into the blob stored in
// queen.log_segments, and unpacks it again.
//
// A segment is the unit of storage: Count consecutive messages of one partition, written
// by one allocation. The blob is one zstd frame of the packed layout below: compressed
// at QUEEN_V2_ZSTD_LEVEL for segments of SmallSegmentBytes (4 KiB) and more, at the
// fastest level below that (see SmallSegmentBytes for why), and stored uncompressed, as
// one raw block, below StoredSegmentBytes (512 bytes); the level is not recorded because
// decoding does not need it. All integers are unsigned LEB128 varints ("uv") unless noted.
//
//	packed  := version:u8 (=1) count:uv frame{count}
//	frame   := flags:u8 id:[16]byte txnLen:uv txn:[txnLen]byte
//	           [subLen:uv sub:[subLen]byte]   if flags & FlagProducerSub
//	           [trace:[16]byte]               if flags & FlagTrace
//	           payloadLen:uv payload:[payloadLen]byte
//
//	flags bit 0 (FlagEncrypted):   payload is an encryption envelope (see core/envelope)
//	flags bit 1 (FlagProducerSub): a producer sub (JWT "sub") follows the transaction id
//	flags bit 2 (FlagTrace):       a 16-byte trace id (UUID) follows
//	other bits must be zero.
//
// Frame k of a segment is the message at offset base_offset + k. The payload is the
// client's JSON exactly as it arrived (never re-encoded). Decoding never trusts the blob:
// every length is checked against the remaining bytes, so a corrupt blob yields an error,
// never a panic or an oversized allocation.
package segment
