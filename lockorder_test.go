package queen

import (
	"context"
	"testing"
	"time"
)

// TestPushLockDoesNotBlockReferences: a push bundle's partition lock (held until its
// transaction ends, as in POST /api/v1/transaction) must not block inserts that merely
// reference the partition, such as a pop creating its consumer row: those take KEY SHARE
// locks, and a conflict there closes a deadlock cycle with the transaction's acks.
func TestPushLockDoesNotBlockReferences(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	a.push(t, map[string]any{"queue": "locks", "partition": "x", "payload": 1})
	ctx := context.Background()
	tx := a.sideTx(t)
	var res []byte
	if err := tx.QueryRow(ctx, pushSQLForTest, []string{"locks"}, []string{"x"}, []int32{1},
		[][]byte{make([]byte, 16)}, []int64{-1}, [][]byte{{0}}, nil).Scan(&res); err != nil {
		t.Fatal(err)
	}
	// The bundle's transaction is open and holds the partition: a pop's first contact
	// with it (a new consumer row) must still go through.
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.pop(t, "/api/v1/pop/queue/locks/partition/x?consumerGroup=g&subscriptionMode=all")
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a pop's consumer-row insert waited for a push bundle's partition lock")
	}
}

const pushSQLForTest = `SELECT queen.log_push_multi_v1($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[])`
