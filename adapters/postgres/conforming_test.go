package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// TestConnectionsStandardConformingStrings: on a database whose default is
// standard_conforming_strings = off, every kind of connection the broker opens reads it
// on: a pooled one (push, pop, ack, the drain job's store), one of the database/sql
// handle (the admin queries) and one built as Listen builds its own (a copy of the pool's
// config).
func TestConnectionsStandardConformingStrings(t *testing.T) {
	url := pgtest.NewDatabaseWith(t, "standard_conforming_strings", "off")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	plain, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	var def string
	if err := plain.QueryRow(ctx, "SHOW standard_conforming_strings").Scan(&def); err != nil || def != "off" {
		t.Fatalf("the database's default = %q (%v), want off: the test would show nothing", def, err)
	}

	s, err := Open(ctx, url, Options{PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	defer db.Close()
	listen, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Close(context.Background())

	tests := []struct {
		name string
		show func() (string, error)
	}{
		{"pool", func() (v string, err error) {
			return v, s.pool.QueryRow(ctx, "SHOW standard_conforming_strings").Scan(&v)
		}},
		{"database/sql handle", func() (v string, err error) {
			return v, db.QueryRowContext(ctx, "SHOW standard_conforming_strings").Scan(&v)
		}},
		{"listen connection", func() (v string, err error) {
			return v, listen.QueryRow(ctx, "SHOW standard_conforming_strings").Scan(&v)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.show()
			if err != nil {
				t.Fatal(err)
			}
			if v != "on" {
				t.Errorf("standard_conforming_strings = %q, want on", v)
			}
		})
	}
}
