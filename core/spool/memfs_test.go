package spool

import (
	"time"

	"github.com/queen-go/queen/adapters/memory"
)

// memFS is the shared in-memory fault-injecting SpoolFS (adapters/memory) under the
// short names these tests use.
type memFS struct{ *memory.SpoolFS }

func newMemFS() *memFS { return &memFS{memory.NewSpoolFS()} }

// crash returns the directory as it would be found after a power loss now.
func (m *memFS) crash() *memFS { return &memFS{m.Crash()} }

func (m *memFS) setFault(f func(op, name string) error, partial bool) { m.SetFault(f, partial) }
func (m *memFS) names(prefix, suffix string) []string                 { return m.Names(prefix, suffix) }
func (m *memFS) put(name string, data []byte)                         { m.Put(name, data) }
func (m *memFS) setSyncHook(f func(name string))                      { m.SetSyncHook(f) }

// slowSync makes every fsync take d, like a disk.
func slowSync(d time.Duration) func(string) { return memory.SlowSync(d) }
