package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestPlainRefusedConformance(t *testing.T) {
	porttest.PlainRefused(t, consumeFixture)
}

// TestPlainFlagsGuard: log_push_multi_v4 refuses plain flags that do not align with the
// segments (a refusal routed to the wrong segment would store plaintext or drop a
// commit), and keeps v3's guards when no flag is given.
func TestPlainFlagsGuard(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	const one = `ARRAY['q'], ARRAY['p'], ARRAY[1], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea]`
	for _, tt := range []struct{ name, sql string }{
		{"more flags than segments", `SELECT queen.log_push_multi_v4(` + one + `, NULL, ARRAY[true, false])`},
		{"a NULL flag", `SELECT queen.log_push_multi_v4(` + one + `, NULL, ARRAY[NULL::boolean])`},
		{"misaligned arrays with flags", `SELECT queen.log_push_multi_v4(ARRAY['q','q'], ARRAY['p'], ARRAY[1], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea], NULL, ARRAY[true, true])`},
		{"v3's guards without flags", `SELECT queen.log_push_multi_v4(ARRAY['q'], ARRAY['p'], ARRAY[2], ARRAY['\x00000000000000000000000000000000'::bytea], ARRAY[-1::int8], ARRAY['\x01'::bytea])`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.pool.Exec(context.Background(), tt.sql)
			if err == nil {
				t.Fatal("the guard did not raise")
			}
			if !errors.Is(translate("test", err), ports.ErrInvalid) {
				t.Fatalf("error %v does not translate to ErrInvalid", err)
			}
		})
	}
}
