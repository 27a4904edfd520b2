package drain

// Gate decides where a push goes: to the database, or straight to the spool. Every push
// is diverted while push maintenance is on (the database is being worked on), while
// pushes are held out of the database (a required synchronous standby is missing:
// core/replication), and while the drain knows the database to be away (then a push
// answers buffered at once instead of each waiting for a failed connection). A push
// bundle that fails tells the gate the database is away; the drain's next successful
// replay or ping brings it back.
type Gate struct {
	d           *Drainer
	maintenance func() bool
	held        func() bool
}

// NewGate returns the gate of d's spool; maintenance reports push maintenance, held
// (nil: never) that pushes must stay out of the database.
func NewGate(d *Drainer, maintenance, held func() bool) *Gate {
	if held == nil {
		held = func() bool { return false }
	}
	return &Gate{d: d, maintenance: maintenance, held: held}
}

// Divert reports whether a push must go to the spool without trying the database.
func (g *Gate) Divert() bool { return g.maintenance() || g.held() || !g.d.Healthy() }

// BundleFailed records that a push bundle did not reach the database.
func (g *Gate) BundleFailed() { g.d.Unhealthy() }
