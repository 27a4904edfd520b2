// Package spool is the broker's crash-safe disk spool (docs/design.md "The pieces"):
// pushes the database could not take (an outage, or maintenance mode) are appended here,
// acknowledged as "buffered" only once they are fsynced, and replayed into the database
// oldest first when it answers again. The directory is reached through ports.SpoolFS, so
// this package does no I/O of its own and is tested over an in-memory fault-injecting
// file system.
//
// # Files
//
// A spool directory holds:
//
//	queen-<ms:13 digits>-<seq:8 digits>.tmp   the active file, being appended to
//	queen-<ms>-<seq>.buf                      a finalized file, waiting for replay
//	queen-<ms>-<seq>.pos                      replay position of the .buf of the same name
//	queen-<ms>-<seq>.pos~                     a position being written (removed by Open)
//	failed/                                   quarantine (see below)
//	LOCK                                      the owner lock (adapters/spoolfs)
//
// ms is the creation time in Unix milliseconds and seq a counter; both only grow (a
// clock that steps back reuses the largest ms seen, and Open restarts seq above every
// name it finds), so sorting by (ms, seq), which is also the lexical order of the names,
// is FIFO order. The active file is renamed to .buf when it holds EventsPerFile records,
// when replay needs its records, at Close, and by Open for a file a dead process left.
//
// # Data file layout (format version 1)
//
// All integers are little-endian. "uv" is an unsigned LEB128 varint
// (encoding/binary.AppendUvarint). CRC32C is CRC-32 with the Castagnoli polynomial
// (hash/crc32.Castagnoli).
//
//	file    := header record*
//	header  := 16 bytes
//	  [0,8)   magic "QUEENSPL"
//	  [8,10)  version u16 = 1
//	  [10,12) flags u16 = 0 (reserved)
//	  [12,16) CRC32C of bytes [0,12), u32
//	record  := 16-byte frame header, then the body
//	  [0,4)   record magic F5 51 52 43 ("\xF5QRC")
//	  [4,8)   body length n, u32, 23 <= n <= MaxRecordBytes
//	  [8,12)  CRC32C of the body, u32
//	  [12,16) CRC32C of bytes [0,12) of this frame header, u32
//	  [16,16+n) body
//	body    := flags:u8 messageId:[16]byte [traceId:[16]byte if flags&2]
//	           tenantLen:uv tenant  queueLen:uv queue  partitionLen:uv partition
//	           txnLen:uv transactionId  subLen:uv producerSub  payloadLen:uv payload
//	  flags bit 0: Encrypted (the payload is a core/envelope envelope)
//	  flags bit 1: HasTrace (a trace id follows the message id)
//	  other bits are zero; the payload ends the body exactly.
//
// The record magic starts with 0xF5, a byte that never occurs in UTF-8, so it never
// occurs inside a JSON payload or a name; the frame header has its own CRC so that a
// damaged length is told apart from a record cut short by a crash.
//
// # Durability
//
// A new file's header is fsynced and the directory is fsynced before any record is
// written to it. Append returns only after its records were written and fsynced; the
// records of the Appends waiting at the same moment are written with one write and one
// fsync (group commit, one appender goroutine). A write or fsync error abandons the
// active file: its valid length (the end of the last acknowledged record) is kept in
// memory and, best effort, in its .pos file, and the next Append starts a new file.
//
// # Reading
//
// A record at offset p is valid when its frame header CRC matches, its magic is right,
// its length is within bounds and inside the file, its body CRC matches and its body
// decodes exactly. When it is not valid the reader resyncs: it searches for the next
// offset q > p holding the record magic at which a valid record starts.
//
//   - If there is one, [p,q) is a corrupt region: its raw bytes are written to
//     failed/<base>-<p:12 digits>.corrupt, the reason to the same name + ".reason",
//     counted (Stats.CorruptRecords) and logged, and replay continues at q. The records
//     after a corrupt one are never lost, and a file is never deleted or skipped because
//     of one.
//   - If there is none, the tail [p,end) is a torn write and is dropped silently when it
//     is shorter than a frame header, or its frame header is valid but its body runs
//     past the end, or it is all zero bytes (a file extended but never written); such a
//     record was never acknowledged, since its fsync never returned. Any other tail is a
//     corrupt region as above.
//
// A file shorter than the 16-byte header holds no acknowledged record (the header is
// synced first) and is deleted. A header with the right magic and CRC but a version or
// flags this reader does not know is never interpreted: Open moves the whole file to
// failed/<base>.buf. A header with a wrong magic or CRC is a corrupt region
// at offset 0 like any other.
//
// # Replay position (<base>.pos, 32 bytes)
//
//	[0,8)   magic "QUEENPOS"
//	[8,10)  version u16 = 1
//	[10,12) reserved u16 = 0
//	[12,20) offset u64: every record before this byte offset is committed or quarantined
//	[20,28) end u64: valid length of the data file, 0 = up to the end of the file
//	[28,32) CRC32C of bytes [0,28), u32
//
// It is written to <base>.pos~, fsynced, renamed over <base>.pos and the directory is
// fsynced, so a crash leaves the old or the new position, never a mix. A position that
// fails its checks is ignored (replay restarts at the beginning of the file: dedup by
// transactionId makes that harmless except on a queue with dedup window 0, which is why
// positions are durable in the first place). A file is deleted once every record in it
// is committed or quarantined, before its position file, so a crash in between leaves
// an orphan position that Open removes, never a file without its position.
//
// # Quarantine (failed/)
//
// Every quarantined item is one data file in failed/ plus its reason, a text file named
// after it with ".reason" appended:
//
//	failed/<base>-<offset:12 digits>.rejected   a record Quarantine was called for, as a
//	                                            valid one-record spool file (an operator
//	                                            can move it back under a queen-... name to
//	                                            replay it)
//	failed/<base>-<offset:12 digits>.corrupt    the raw bytes of a corrupt region
//	failed/<base>.buf                           a whole file of an unsupported version
//
// The reason is written first, then the data, each to a "~" name, fsynced and renamed,
// then the directory is fsynced, all before the position can move past the item: a data
// name without "~" is always complete and has its reason, and quarantining an item again
// after a crash finds it there and does not count it twice. Stats.FailedFiles and
// FailedBytes count the data files (Open counts those already present when the SpoolFS
// implements ports.SpoolFailedLister).
//
// # Per-partition order
//
// The spool counts pending records per (tenant, queue, partition) from the moment an
// Append is accepted until replay commits or quarantines them; Open rebuilds the counts by
// scanning every pending file. While Pending is true for a partition the push path
// spools that partition's new pushes behind the old ones, and replay reads files oldest
// first and records in file order, so a partition's order holds through an outage.
package spool
