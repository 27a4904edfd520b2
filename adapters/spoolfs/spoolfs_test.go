package spoolfs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
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

func TestLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := newFS(t, dir), newFS(t, dir)
	unlock, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("second Lock in the same process = %v", err)
	}
	if _, err := a.Lock(); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("second Lock on the same FS = %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock2, err := b.Lock()
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	_ = unlock2()
}

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

func TestFileOperations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newFS(t, dir)
	w, err := f.Create("a.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create("a.tmp"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create of an existing name = %v", err)
	}
	if err := f.Rename("a.tmp", "a.buf"); err != nil {
		t.Fatal(err)
	}
	if b, err := f.ReadFile("a.buf"); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if err := f.Rename("a.buf", "failed/a.buf"); err != nil {
		t.Fatal(err)
	}
	w, _ = f.Create("b.buf")
	_ = w.Close()
	if err := f.SyncDir(); err != nil {
		t.Fatal(err)
	}
	names, err := f.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"b.buf"}) {
		t.Fatalf("List = %v (want regular files only, not failed/)", names)
	}
	failed, err := f.ListFailed()
	if err != nil || !reflect.DeepEqual(failed, map[string]int64{"a.buf": 5}) {
		t.Fatalf("ListFailed = %v, %v", failed, err)
	}
	if b, err := f.ReadFile("failed/a.buf"); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile(failed/a.buf) = %q, %v", b, err)
	}
	if err := f.Remove("b.buf"); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("b.buf"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Remove = %v", err)
	}
	if _, err := f.ReadFile("b.buf"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a removed file = %v", err)
	}
	for _, bad := range []string{"", "..", "../x", "a/b", "failed/", "failed/../x", "failed/a/b", "/etc/passwd", "x\x00"} {
		if _, err := f.Create(bad); err == nil {
			t.Errorf("Create(%q) accepted", bad)
		}
		if _, err := f.ReadFile(bad); err == nil {
			t.Errorf("ReadFile(%q) accepted", bad)
		}
	}
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
