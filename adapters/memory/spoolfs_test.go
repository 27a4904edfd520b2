package memory

import (
	"testing"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestSpoolFSConformance(t *testing.T) {
	porttest.SpoolFS(t, func(t *testing.T) porttest.SpoolFSFixture {
		m := NewSpoolFS()
		return porttest.SpoolFSFixture{
			FS:     m,
			Handle: func(*testing.T) ports.SpoolFS { return m.Handle() },
			Mkdir: func(t *testing.T, name string) {
				if err := m.Mkdir(name); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
