package hotlist

import (
	"testing"
	"time"
)

// TestStrandedFollowsTheStatementTimeout: a slot is taken back after twice the longest a
// pop's statement may run, unless Stranded is set; without either, after a minute.
func TestStrandedFollowsTheStatementTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts Options
		want time.Duration
	}{
		{"twice the statement timeout", Options{StatementTimeout: 30 * time.Second}, time.Minute},
		{"a short statement timeout", Options{StatementTimeout: 7 * time.Second}, 14 * time.Second},
		{"set explicitly", Options{StatementTimeout: 7 * time.Second, Stranded: time.Second}, time.Second},
		{"neither", Options{}, time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.defaults()
			if opts.Stranded != tt.want {
				t.Errorf("Stranded = %v, want %v", opts.Stranded, tt.want)
			}
		})
	}
}
