package spoolfs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

func newFS(t testing.TB, dir string) *spoolfs.FS {
	t.Helper()
	f, err := spoolfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewCreatesDirectories(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "buffers")
	newFS(t, dir)
	for _, d := range []string{dir, filepath.Join(dir, "failed")} {
		info, err := os.Stat(d)
		if err != nil || !info.IsDir() || info.Mode().Perm()&0o007 != 0 {
			t.Fatalf("%s: %v %v", d, info, err)
		}
	}
}

// Locking and the file operations within one process are the port's conformance suite
// (conformance_test.go); the tests here cover what is particular to a real directory.

func TestSpoolOpenLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := spool.Open(newFS(t, dir), spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if _, err := spool.Open(newFS(t, dir), spool.Options{}); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("second Open = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := spool.Open(newFS(t, dir), spool.Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Start()
	_ = s2.Close()
}

// TestLockAcrossProcesses holds the lock in a child process.
func TestLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("SPOOLFS_LOCK_CHILD"); dir != "" {
		f, err := spoolfs.New(dir)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if _, err := f.Lock(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // hold until the parent closes stdin
		os.Exit(0)
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "SPOOLFS_LOCK_CHILD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	if _, err := spool.Open(newFS(t, dir), spool.Options{}); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("Open while another process holds the lock = %v", err)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s, err := spool.Open(newFS(t, dir), spool.Options{})
	if err != nil {
		t.Fatalf("Open after the other process exited: %v", err)
	}
	s.Start()
	_ = s.Close()
}

func record(i int) spool.Record {
	r := spool.Record{
		Tenant: ports.DefaultTenant, Queue: "orders", Partition: fmt.Sprint("p", i%3),
		TransactionID: fmt.Sprintf("txn-%d", i), Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)),
	}
	r.MessageID[0] = byte(i)
	return r
}

func TestSpoolRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := spool.Open(newFS(t, dir), spool.Options{EventsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	var want []spool.Record
	for i := range 10 {
		r := record(i)
		want = append(want, r)
		if err := s.Append(context.Background(), []spool.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.Next(3)
	if err != nil || len(b.Records) != 3 {
		t.Fatal(b, err)
	}
	if err := s.Commit(b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = spool.Open(newFS(t, dir), spool.Options{EventsPerFile: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Close()
	if st := s.Stats(); st.PendingRecords != 7 || st.PendingFiles != 3 {
		t.Fatalf("stats after reopen %+v", st)
	}
	var got []spool.Record
	for {
		b, err := s.Next(2)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		got = append(got, b.Records...)
		if err := s.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, want[3:]) {
		t.Fatalf("replayed %v\nwant %v", got, want[3:])
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"LOCK", "failed"}) {
		t.Fatalf("left in the directory: %v", left)
	}
}
