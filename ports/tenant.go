package ports

// DefaultTenant is the tenant of every queue while tenancy is off. Every in-memory key
// already carries the tenant, so turning tenancy on later changes no data structure.
const DefaultTenant = "00000000-0000-0000-0000-000000000001"
