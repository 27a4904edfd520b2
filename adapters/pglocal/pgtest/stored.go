package pgtest

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/core/segment"
)

// StoredMessage is one message as PostgreSQL stores it, frame by frame of the segments
// in queen.log_segments.
type StoredMessage struct {
	Partition     string
	TransactionID string
	Encrypted     bool   // the frame's encrypted flag
	Payload       []byte // the stored payload: the encryption envelope when Encrypted
}

// StoredMessages reads every message of queue (any tenant) from the database at dbURL,
// partitions by name and messages in offset order, decoding the segment blobs with the
// broker's codec. It is for the few black-box tests whose promise is about the stored
// bytes themselves and cannot be seen through the API: encryption at rest (the stored
// payload is an envelope, not the plaintext). Everything else belongs to the API.
func StoredMessages(t testing.TB, dbURL, queue string) []StoredMessage {
	t.Helper()
	ctx, conn, done := openConn(t, dbURL)
	defer done()
	rows, err := conn.Query(ctx, `SELECT p.name, s.blob
		FROM queen.log_segments s
		JOIN queen.log_partitions p ON p.id = s.partition_id
		JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1
		ORDER BY p.name, s.base_offset`, queue)
	if err != nil {
		t.Fatalf("pgtest: read the segments of %s: %v", queue, err)
	}
	type seg struct {
		partition string
		blob      []byte
	}
	segs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (seg, error) {
		var s seg
		return s, r.Scan(&s.partition, &s.blob)
	})
	if err != nil {
		t.Fatalf("pgtest: read the segments of %s: %v", queue, err)
	}
	codec, err := segment.NewCodec(1) // decoding does not depend on the level
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	var out []StoredMessage
	for _, s := range segs {
		frames, err := codec.Decode(s.blob)
		if err != nil {
			t.Fatalf("pgtest: a segment of %s/%s: %v", queue, s.partition, err)
		}
		for _, f := range frames {
			out = append(out, StoredMessage{Partition: s.partition, TransactionID: f.TransactionID,
				Encrypted: f.Encrypted, Payload: f.Payload})
		}
	}
	return out
}
