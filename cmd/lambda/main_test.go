package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen"
	"github.com/queen-go/queen/adapters/lambda"
	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/spool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fixture returns a database with the schema and a spool directory holding n records of
// queue q (partitions p0, p1), written as a broker would.
func fixture(t *testing.T, q string, n int) (db, dir string) {
	t.Helper()
	ctx := context.Background()
	db = pgtest.NewDatabase(t)
	st, err := postgres.Open(ctx, db, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "spool")
	fsys, err := spoolfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spool.Open(fsys, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp.Start()
	recs := make([]spool.Record, n)
	for i := range recs {
		recs[i] = spool.Record{Tenant: "00000000-0000-0000-0000-000000000001", Queue: q, Partition: fmt.Sprintf("p%d", i%2),
			TransactionID: fmt.Sprintf("t%d", i), MessageID: [16]byte{byte(i), 1}, Payload: []byte(fmt.Sprintf(`{"seq":%d}`, i))}
	}
	if err := sp.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	return db, dir
}

// stored returns the sequences stored per partition, in offset order.
func stored(t *testing.T, db, q string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT p.name, p.last_offset + 1 FROM queen.log_partitions p
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, q)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

func TestDrainCommand(t *testing.T) {
	t.Parallel()
	db, dir := fixture(t, "drain-cmd", 30)
	var out, errb bytes.Buffer
	env := []string{"QUEEN_PG_URL=" + db, "LOG_LEVEL=warn", "DB_POOL_SIZE=4"}
	if code := run([]string{"--dir", dir}, env, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	var sum drain.JobSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("summary %q: %v", out.String(), err)
	}
	if sum.Replayed != 30 || sum.Remaining != 0 || len(sum.Dirs) != 1 || sum.Dirs[0].Skipped {
		t.Fatalf("summary %+v", sum)
	}
	if got := stored(t, db, "drain-cmd"); got["p0"] != 15 || got["p1"] != 15 {
		t.Fatalf("stored %v", got)
	}
	// Again: nothing left, nothing stored twice.
	out.Reset()
	if code := run([]string{"--dir", dir}, env, &out, &errb); code != 0 || !strings.Contains(out.String(), `"replayed":0`) {
		t.Fatalf("second run: exit %d %s %s", code, out.String(), errb.String())
	}
	if got := stored(t, db, "drain-cmd"); got["p0"] != 15 {
		t.Fatalf("second run stored more: %v", got)
	}
}

func TestDrainCommandErrors(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run([]string{"--bogus"}, nil, &out, &errb); code != 2 {
		t.Fatalf("bad flag: exit %d", code)
	}
	errb.Reset()
	if code := run([]string{"--dir", t.TempDir()}, []string{"QUEEN_DATA_DIR=" + t.TempDir()}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "QUEEN_PG_URL") {
		t.Fatalf("no database: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"--dir", t.TempDir()}, []string{"QUEEN_SHARDS=postgres://a/q postgres://b/q"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "replays the spool of a broker on one database") {
		t.Fatalf("several shards: exit %d, %s", code, errb.String())
	}
}

func TestDrainSkipsAnOwnedDirectory(t *testing.T) {
	t.Parallel()
	db, dir := fixture(t, "drain-owned", 4)
	fsys, err := spoolfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := spool.Open(fsys, spool.Options{}) // a live broker holds it
	if err != nil {
		t.Fatal(err)
	}
	owner.Start()
	defer owner.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"--dir", dir}, []string{"QUEEN_PG_URL=" + db, "LOG_LEVEL=warn"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `"skipped":true`) {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if got := stored(t, db, "drain-owned"); len(got) != 0 {
		t.Fatalf("an owned directory was drained: %v", got)
	}
}

// TestLambdaInvocation calls the Lambda handler directly, as the runtime would, with a
// deadline-bearing context and a scheduled event.
func TestLambdaInvocation(t *testing.T) {
	t.Parallel()
	db, dir := fixture(t, "drain-lambda", 10)
	cfg, err := config.Parse(map[string]string{"QUEEN_PG_URL": db, "LOG_LEVEL": "warn", "DB_POOL_SIZE": "4"})
	if err != nil {
		t.Fatal(err)
	}
	job, cleanup, err := queen.InitializeDrain(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	job.Start()
	defer job.Stop(context.Background())
	h := lambda.Handler(job, []string{dir}, cfg.StatementTimeout)
	event := json.RawMessage(`{"version":"0","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`)

	// A deadline already inside the margin: nothing is drained, nothing is lost.
	short, cancel := context.WithTimeout(context.Background(), lambda.Margin/2)
	res, err := h(short, event)
	cancel()
	if s := res.(drain.JobSummary); err != nil || s.Replayed != 0 || s.Remaining != 10 {
		t.Fatalf("short invocation: %+v, %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lambda.Margin+30*time.Second)
	defer cancel()
	res, err = h(ctx, event)
	if s := res.(drain.JobSummary); err != nil || s.Replayed != 10 || s.Remaining != 0 {
		t.Fatalf("invocation: %+v, %v", res, err)
	}
	if got := stored(t, db, "drain-lambda"); got["p0"] != 5 || got["p1"] != 5 {
		t.Fatalf("stored %v", got)
	}
}

// Push maintenance pauses the drain job like the brokers' drains (docs/api.md §5.12): the
// database being worked on receives no replayed pushes either.
func TestDrainPausedByPushMaintenance(t *testing.T) {
	t.Parallel()
	db, dir := fixture(t, "drain-maint", 6)
	st, err := postgres.Open(context.Background(), db, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetFlag(context.Background(), "maintenance_mode", true); err != nil {
		t.Fatal(err)
	}
	env := []string{"QUEEN_PG_URL=" + db, "LOG_LEVEL=warn", "DB_POOL_SIZE=4"}
	var out, errb bytes.Buffer
	if code := run([]string{"--dir", dir}, env, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	var sum drain.JobSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.Replayed != 0 || sum.Remaining != 6 ||
		len(sum.Dirs) != 1 || !sum.Dirs[0].Paused {
		t.Fatalf("summary %s: %v", out.String(), err)
	}
	if got := stored(t, db, "drain-maint"); len(got) != 0 {
		t.Fatalf("drained under push maintenance: %v", got)
	}
	if err := st.SetFlag(context.Background(), "maintenance_mode", false); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"--dir", dir}, env, &out, &errb); code != 0 || !strings.Contains(out.String(), `"replayed":6`) {
		t.Fatalf("after maintenance: exit %d %s %s", code, out.String(), errb.String())
	}
}
