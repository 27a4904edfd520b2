package auth

import (
	"context"
	"testing"
)

// TestGranted is docs/api.md §3's table: role sets, not a ladder.
func TestGranted(t *testing.T) {
	t.Parallel()
	type row struct{ admin, rw, ro, wo, none bool }
	tests := []struct {
		level Level
		want  row
	}{
		{Public, row{true, true, true, true, true}},
		{ReadOnly, row{admin: true, rw: true, ro: true}},
		{WriteOnly, row{admin: true, rw: true, wo: true}},
		{ReadWrite, row{admin: true, rw: true}},
		{Admin, row{admin: true}},
		{Level(0), row{}},
		{Level(99), row{}},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			t.Parallel()
			got := row{
				admin: Granted(tt.level, Roles(RoleAdmin)),
				rw:    Granted(tt.level, Roles(RoleReadWrite)),
				ro:    Granted(tt.level, Roles(RoleReadOnly)),
				wo:    Granted(tt.level, Roles(RoleWriteOnly)),
				none:  Granted(tt.level, 0),
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPrincipalContext(t *testing.T) {
	t.Parallel()
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("a principal in an empty context")
	}
	p := Principal{Subject: "alice", Roles: Roles(RoleReadOnly, RoleWriteOnly)}
	got, ok := FromContext(NewContext(context.Background(), p))
	if !ok || got != p {
		t.Fatalf("got %+v %v", got, ok)
	}
	if !got.May(WriteOnly) || !got.May(ReadOnly) || got.May(ReadWrite) {
		t.Fatalf("read-only + write-only: %+v", got)
	}
}
