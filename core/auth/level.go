package auth

import "context"

// Level is the access level of a route (docs/api.md §3).
type Level uint8

// The levels. The zero value is not a level: it grants nothing.
const (
	Public    Level = iota + 1 // no token needed
	ReadOnly                   // reads: status, resources, messages, traces, dead letters
	WriteOnly                  // push
	ReadWrite                  // consume (pop, ack, transaction) and changes short of deletion
	Admin                      // system routes and deletions
)

var levelNames = map[Level]string{Public: "PUBLIC", ReadOnly: "READ_ONLY", WriteOnly: "WRITE_ONLY",
	ReadWrite: "READ_WRITE", Admin: "ADMIN"}

func (l Level) String() string {
	if s, ok := levelNames[l]; ok {
		return s
	}
	return "UNKNOWN"
}

// Role is one of the four roles a token may carry.
type Role uint8

// The roles, as bits of a RoleSet.
const (
	RoleAdmin Role = 1 << iota
	RoleReadWrite
	RoleReadOnly
	RoleWriteOnly
)

// RoleSet is a set of roles.
type RoleSet uint8

// Roles makes a set of roles.
func Roles(rs ...Role) RoleSet {
	var s RoleSet
	for _, r := range rs {
		s |= RoleSet(r)
	}
	return s
}

// Has reports whether r is in the set.
func (s RoleSet) Has(r Role) bool { return s&RoleSet(r) != 0 }

// grants is the level -> role-set table of docs/api.md §3: role sets, not a ladder. A
// write-only token reaches WRITE_ONLY routes only, a read-only token READ_ONLY routes
// only; neither reaches READ_WRITE.
var grants = map[Level]RoleSet{
	ReadOnly:  Roles(RoleReadOnly, RoleReadWrite, RoleAdmin),
	WriteOnly: Roles(RoleWriteOnly, RoleReadWrite, RoleAdmin),
	ReadWrite: Roles(RoleReadWrite, RoleAdmin),
	Admin:     Roles(RoleAdmin),
}

// Granted reports whether a token with roles may call a route of level l. Public is
// granted to everyone (even without a token); a level missing from the table to no one.
func Granted(l Level, roles RoleSet) bool {
	if l == Public {
		return true
	}
	return grants[l]&roles != 0
}

// Principal is who a valid token speaks for.
type Principal struct {
	Subject string // the sub claim; "" when the token has none
	Roles   RoleSet
}

// May reports whether p may call a route of level l.
func (p Principal) May(l Level) bool { return Granted(l, p.Roles) }

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of an authenticated request; ok is false when
// authentication is off or the route is public.
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}
