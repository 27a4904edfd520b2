// Package queen is the composition root of queen-go: it wires the core, the ports and the
// adapters into the long-running broker (App). Only this package and cmd/* see every
// layer; the providers here are shared by every entry point's google/wire injector.
//
// wire.go holds the injector (build tag wireinject); wire_gen.go is generated from it by
// `make generate` and committed.
package queen
