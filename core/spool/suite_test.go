package spool_test

import (
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/spool/spooltest"
)

// TestSuiteMemory runs the crash and damage suite over the in-memory file system; Kill
// is a power loss there (only synced bytes and names survive), stricter than the
// process death the suite asks for. adapters/spoolfs runs the same suite on a real
// directory.
func TestSuiteMemory(t *testing.T) {
	spooltest.Run(t, func(*testing.T) spooltest.Env { return memEnv(memory.NewSpoolFS()) })
}

func memEnv(m *memory.SpoolFS) spooltest.Env {
	return spooltest.Env{
		FS: m,
		Read: func(t *testing.T, name string) []byte {
			t.Helper()
			b, err := m.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Write: func(_ *testing.T, name string, data []byte) { m.Put(name, data) },
		Names: func(*testing.T) []string { return m.Names("", "") },
		Kill:  func(*testing.T) spooltest.Env { return memEnv(m.Crash()) },
	}
}
