package drain

import "testing"

// A push is diverted to the spool under push maintenance, while pushes are held out of
// the database, and while the database is known to be away; otherwise it goes there.
func TestGateDiverts(t *testing.T) {
	tests := []struct {
		name                    string
		maintenance, held, away bool
		divert                  bool
	}{
		{"nothing: the database", false, false, false, false},
		{"push maintenance", true, false, false, true},
		{"held for a synchronous standby", false, true, false, true},
		{"the database away", false, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "q", 0, 1, Options{})
			if tt.away {
				f.d.Unhealthy()
			}
			g := NewGate(f.d, func() bool { return tt.maintenance }, func() bool { return tt.held })
			if got := g.Divert(); got != tt.divert {
				t.Fatalf("Divert = %v, want %v", got, tt.divert)
			}
		})
	}
	if NewGate(newFixture(t, "q", 0, 1, Options{}).d, func() bool { return false }, nil).Divert() {
		t.Fatal("a gate without a hold diverted")
	}
}
