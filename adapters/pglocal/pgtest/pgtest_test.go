package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}

func queryString(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var v string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestNewDatabaseGivesSeparateEmptyDatabases(t *testing.T) {
	t.Parallel()
	urlA, urlB := NewDatabase(t), NewDatabase(t)
	if urlA == urlB {
		t.Fatalf("both calls returned %s", urlA)
	}
	a, b := connect(t, urlA), connect(t, urlB)
	defer a.Close(context.Background())
	defer b.Close(context.Background())

	nameA := queryString(t, a, "SELECT current_database()")
	nameB := queryString(t, b, "SELECT current_database()")
	if nameA == nameB {
		t.Fatalf("both URLs lead to database %s", nameA)
	}
	for _, conn := range []*pgx.Conn{a, b} {
		if n := queryString(t, conn, "SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public'"); n != "0" {
			t.Errorf("fresh database has %s tables in public", n)
		}
	}
	if _, err := a.Exec(context.Background(), "CREATE TABLE only_in_a (v int); INSERT INTO only_in_a VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, a, "SELECT v::text FROM only_in_a"); got != "1" {
		t.Errorf("database A reads %q, want 1", got)
	}
	if got := queryString(t, b, "SELECT coalesce(to_regclass('only_in_a')::text, 'absent')"); got != "absent" {
		t.Errorf("table of database A visible in database B: %s", got)
	}
}

func TestNewDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var name string
	var leftOpen *pgx.Conn // a session the test forgot to close: WITH (FORCE) must not care
	t.Run("test using a database", func(t *testing.T) {
		leftOpen = connect(t, NewDatabase(t))
		name = queryString(t, leftOpen, "SELECT current_database()")
	})
	defer leftOpen.Close(context.Background())

	admin := connect(t, Server(t))
	defer admin.Close(context.Background())
	if n := queryString(t, admin, "SELECT count(*)::text FROM pg_database WHERE datname = $1", name); n != "0" {
		t.Errorf("database %s still exists after its test's cleanup", name)
	}
}

func TestServerIsStable(t *testing.T) {
	t.Parallel()
	first, second := Server(t), Server(t)
	if first != second {
		t.Errorf("Server returned %s, then %s", first, second)
	}
	conn := connect(t, first)
	defer conn.Close(context.Background())
	if got := queryString(t, conn, "SELECT 1::text"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
}

func TestWithDatabase(t *testing.T) {
	tests := []struct {
		name  string
		admin string
		want  string
	}{
		{
			name:  "URL with query",
			admin: "postgres://postgres@127.0.0.1:5555/postgres?sslmode=disable",
			want:  "postgres://postgres@127.0.0.1:5555/qt_1_2?sslmode=disable",
		},
		{
			name:  "URL without path, with password",
			admin: "postgresql://u:p%40ss@db.example:5432",
			want:  "postgresql://u:p%40ss@db.example:5432/qt_1_2",
		},
		{
			name:  "keyword/value",
			admin: "host=127.0.0.1 port=5555 user=postgres dbname=postgres",
			want:  "host=127.0.0.1 port=5555 user=postgres dbname=postgres dbname=qt_1_2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withDatabase(tt.admin, "qt_1_2")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("withDatabase = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewDatabaseWithSetsDefaults(t *testing.T) {
	t.Parallel()
	conn := connect(t, NewDatabaseWith(t, "standard_conforming_strings", "off", "application_name", `it's a \ test`))
	defer conn.Close(context.Background())
	if got := queryString(t, conn, "SHOW standard_conforming_strings"); got != "off" {
		t.Errorf("standard_conforming_strings = %q, want off", got)
	}
	if got := queryString(t, conn, "SELECT current_setting('application_name')"); got != `it's a \ test` {
		t.Errorf("application_name = %q", got)
	}
	other := connect(t, NewDatabase(t))
	defer other.Close(context.Background())
	if got := queryString(t, other, "SHOW standard_conforming_strings"); got != "on" {
		t.Errorf("a plain database has standard_conforming_strings = %q, want on", got)
	}
}

// A standby of a database on the shared cluster starts although that cluster allows
// prepared transactions (a standby must match the primary's max_prepared_transactions),
// and replays what the primary commits.
func TestNewStandbyOfTheSharedCluster(t *testing.T) {
	t.Parallel()
	primary := NewDatabase(t)
	standby := NewStandby(t, primary)
	ctx := context.Background()
	p, err := pgx.Connect(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Exec(ctx, `CREATE TABLE replayed (v int); INSERT INTO replayed VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	s, err := pgx.Connect(ctx, standby.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	// A bound, not a timing: CI runs this beside the e2e packages' clusters on two cores.
	deadline := time.Now().Add(90 * time.Second)
	for {
		var v int
		if err := s.QueryRow(ctx, `SELECT v FROM replayed`).Scan(&v); err == nil && v == 7 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby did not replay the primary's commit within 90 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
