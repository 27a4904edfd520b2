// Package config loads the configuration of the queen-go server from
// environment variables.
//
// The Config struct is the single source of truth for every variable: each
// field carries, in its struct tags, the variable's name (env), its default
// (envDefault), an optional alias read when the main name is unset (alias),
// its bounds (min, max, oneof, check), the section it is listed under
// (section) and the text that explains it (help). Parsing, validation and
// the `queen-server --help` text produced by Usage are all derived from
// those tags, so they cannot drift apart; the package tests fail when a
// field lacks help text. Where a core package has a default of its own for what
// a variable sets (fusion.DefaultShards, ...: its tests and tools need no
// configuration), the variable's default is that same value, and the package
// tests fail when they differ.
//
// Rules shared by all variables:
//
//   - An unset or empty variable takes its default.
//   - Durations are given as integer milliseconds and become time.Duration.
//   - Booleans accept true/false, 1/0, yes/no and on/off, in any case.
//   - Every invalid value stops start-up: Load and Parse report all problems
//     at once (joined with errors.Join), each naming the variable, the bad
//     value and what is expected, for example
//     config: QUEEN_V2_FUSION_SHARDS="abc": want an integer between 1 and 256
//     Secret values (the encryption key, passwords inside QUEEN_PG_URL) are
//     not echoed.
//
// When neither QUEEN_PG_URL nor any PG_* connection part is set, the server
// runs an embedded PostgreSQL in QUEEN_DATA_DIR; see Config.Embedded and
// Config.DatabaseURL.
package config
