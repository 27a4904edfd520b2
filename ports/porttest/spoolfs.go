package porttest

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/queen-go/queen/ports"
)

// SpoolFSFixture is a fresh, empty spool directory of one ports.SpoolFS implementation,
// plus the hooks the suite needs for what the port cannot do itself.
type SpoolFSFixture struct {
	// FS is a handle on the directory.
	FS ports.SpoolFS
	// Handle returns another handle on the same directory, as a second process (or a
	// second part of this one) would open it.
	Handle func(t *testing.T) ports.SpoolFS
	// Mkdir makes an empty subdirectory, "x" directly in the directory or "failed/x" in
	// the quarantine: something an operator or another program left there, which the
	// listings must not report as files.
	Mkdir func(t *testing.T, name string)
}

// SpoolFS runs the conformance suite of ports.SpoolFS (and of ports.SpoolFailedLister
// when the implementation has it); newFixture must return an empty directory of its own
// on every call.
func SpoolFS(t *testing.T, newFixture func(t *testing.T) SpoolFSFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f SpoolFSFixture)
	}{
		{"lock excludes every other handle until unlocked", testSpoolLock},
		{"a stale unlock does not release a later owner", testSpoolStaleUnlock},
		{"list reports the regular files directly in the directory", testSpoolList},
		{"create refuses an existing name", testSpoolCreateExisting},
		{"read of a missing file is not-exist", testSpoolReadMissing},
		{"written bytes read back before and after sync", testSpoolRoundTrip},
		{"a closed file refuses writes, syncs and a second close", testSpoolClosedFile},
		{"rename within the directory", testSpoolRename},
		{"rename replaces an existing target", testSpoolRenameReplaces},
		{"rename into and within failed/", testSpoolRenameFailed},
		{"rename of a missing file is not-exist", testSpoolRenameMissing},
		{"rename onto itself keeps the file", testSpoolRenameSelf},
		{"remove deletes a file once", testSpoolRemove},
		{"names that could escape the directory are rejected", testSpoolBadNames},
		{"the quarantine directory is not a file", testSpoolFailedIsDir},
		{"sync of the directory", testSpoolSyncDir},
		{"failed/ listing with sizes", testSpoolListFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// writeFile creates name with data through the port, synced and closed.
func writeFile(t *testing.T, fsys ports.SpoolFS, name string, data []byte) {
	t.Helper()
	w, err := fsys.Create(name)
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	if n, err := w.Write(data); err != nil || n != len(data) {
		t.Fatalf("Write(%q) = %d, %v; want %d bytes", name, n, err, len(data))
	}
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync(%q): %v", name, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close(%q): %v", name, err)
	}
}

// wantContent fails unless name holds exactly data.
func wantContent(t *testing.T, fsys ports.SpoolFS, name string, data []byte) {
	t.Helper()
	got, err := fsys.ReadFile(name)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile(%q) = %q, %v; want %q", name, got, err, data)
	}
}

// wantMissing fails unless name reads as not existing.
func wantMissing(t *testing.T, fsys ports.SpoolFS, name string) {
	t.Helper()
	if got, err := fsys.ReadFile(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile(%q) = %q, %v; want an error satisfying fs.ErrNotExist", name, got, err)
	}
}

// wantList fails unless List reports exactly names (in any order).
func wantList(t *testing.T, fsys ports.SpoolFS, names ...string) {
	t.Helper()
	got, err := fsys.List()
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}

func testSpoolLock(t *testing.T, f SpoolFSFixture) {
	unlock, err := f.FS.Lock()
	if err != nil {
		t.Fatalf("Lock of a free directory: %v", err)
	}
	other := f.Handle(t)
	if _, err := other.Lock(); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("Lock from another handle while owned = %v, want ErrSpoolLocked", err)
	}
	if _, err := f.FS.Lock(); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("second Lock on the owning handle = %v, want ErrSpoolLocked", err)
	}
	if err := unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	unlock2, err := other.Lock()
	if err != nil {
		t.Fatalf("Lock from another handle after unlock: %v", err)
	}
	if err := unlock2(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	// Released again: the first handle can take it back.
	unlock3, err := f.FS.Lock()
	if err != nil {
		t.Fatalf("Lock after the second owner unlocked: %v", err)
	}
	if err := unlock3(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
}

func testSpoolStaleUnlock(t *testing.T, f SpoolFSFixture) {
	unlock, err := f.FS.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	second := f.Handle(t)
	unlock2, err := second.Lock()
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	t.Cleanup(func() { _ = unlock2() })
	// The first owner's unlock, called again (an error path running its cleanup twice),
	// must not hand the directory to a third owner while the second holds it.
	_ = unlock()
	if _, err := f.Handle(t).Lock(); !errors.Is(err, ports.ErrSpoolLocked) {
		t.Fatalf("Lock after a stale unlock = %v, want ErrSpoolLocked (the second owner still holds it)", err)
	}
}

func testSpoolList(t *testing.T, f SpoolFSFixture) {
	wantList(t, f.FS)
	writeFile(t, f.FS, "a.buf", []byte("a"))
	writeFile(t, f.FS, "b.pos", nil)
	active, err := f.FS.Create("c.tmp") // still being written: a file all the same
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = active.Close() })
	writeFile(t, f.FS, "failed/d.corrupt", []byte("d"))
	f.Mkdir(t, "sub")
	f.Mkdir(t, "failed/sub")
	wantList(t, f.FS, "a.buf", "b.pos", "c.tmp")
	// Another handle sees the same directory.
	wantList(t, f.Handle(t), "a.buf", "b.pos", "c.tmp")
}

func testSpoolCreateExisting(t *testing.T, f SpoolFSFixture) {
	for _, name := range []string{"a.buf", "failed/a.buf"} {
		writeFile(t, f.FS, name, []byte("keep"))
		if w, err := f.FS.Create(name); !errors.Is(err, fs.ErrExist) {
			if err == nil {
				_ = w.Close()
			}
			t.Fatalf("Create(%q) of an existing file = %v, want an error satisfying fs.ErrExist", name, err)
		}
		wantContent(t, f.FS, name, []byte("keep"))
	}
	// A subdirectory's name is taken too.
	f.Mkdir(t, "sub")
	if w, err := f.FS.Create("sub"); !errors.Is(err, fs.ErrExist) {
		if err == nil {
			_ = w.Close()
		}
		t.Fatalf("Create of a subdirectory's name = %v, want an error satisfying fs.ErrExist", err)
	}
}

func testSpoolReadMissing(t *testing.T, f SpoolFSFixture) {
	wantMissing(t, f.FS, "nope.buf")
	wantMissing(t, f.FS, "failed/nope.buf")
	// A name that exists only in failed/ is missing in the directory, and the reverse.
	writeFile(t, f.FS, "failed/only-failed", []byte("x"))
	writeFile(t, f.FS, "only-here", []byte("y"))
	wantMissing(t, f.FS, "only-failed")
	wantMissing(t, f.FS, "failed/only-here")
}

func testSpoolRoundTrip(t *testing.T, f SpoolFSFixture) {
	// Binary content: zero bytes, the record magic's 0xF5 (not UTF-8), and a length
	// (64 KiB + 7) that is no multiple of any block size.
	big := make([]byte, 64<<10+7)
	for i := range big {
		big[i] = byte(i*7 + i>>8)
	}
	big[0], big[1] = 0, 0xF5
	w, err := f.FS.Create("a.tmp")
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, part := range [][]byte{[]byte("hello "), []byte("world"), big} {
		if n, err := w.Write(part); err != nil || n != len(part) {
			t.Fatalf("Write = %d, %v; want %d", n, err, len(part))
		}
		want = append(want, part...)
		// The spool reads a file it is still appending to: written bytes are visible at
		// once, before any Sync or Close.
		wantContent(t, f.FS, "a.tmp", want)
	}
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	wantContent(t, f.FS, "a.tmp", want)
	if _, err := w.Write([]byte("!")); err != nil {
		t.Fatalf("Write after Sync: %v", err)
	}
	want = append(want, '!')
	if err := w.Sync(); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantContent(t, f.FS, "a.tmp", want)
	wantContent(t, f.Handle(t), "a.tmp", want)
	// An empty file reads as empty, not as missing.
	writeFile(t, f.FS, "empty", nil)
	if got, err := f.FS.ReadFile("empty"); err != nil || len(got) != 0 {
		t.Fatalf("ReadFile of an empty file = %q, %v", got, err)
	}
}

func testSpoolClosedFile(t *testing.T, f SpoolFSFixture) {
	w, err := f.FS.Create("a.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Write([]byte("lost")); !errors.Is(err, fs.ErrClosed) || n != 0 {
		t.Fatalf("Write after Close = %d, %v; want 0 and fs.ErrClosed", n, err)
	}
	if err := w.Sync(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Sync after Close = %v, want fs.ErrClosed", err)
	}
	if err := w.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Close = %v, want fs.ErrClosed", err)
	}
	wantContent(t, f.FS, "a.tmp", []byte("kept"))
}

func testSpoolRename(t *testing.T, f SpoolFSFixture) {
	writeFile(t, f.FS, "a.tmp", []byte("data"))
	if err := f.FS.Rename("a.tmp", "a.buf"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	wantContent(t, f.FS, "a.buf", []byte("data"))
	wantMissing(t, f.FS, "a.tmp")
	wantList(t, f.FS, "a.buf")
	// A file renamed while open keeps receiving its writes (the spool finalizes its
	// active file by renaming it, after its last write).
	w, err := f.FS.Create("b.tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := f.FS.Rename("b.tmp", "b.buf"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantContent(t, f.FS, "b.buf", []byte("12"))
}

func testSpoolRenameReplaces(t *testing.T, f SpoolFSFixture) {
	writeFile(t, f.FS, "new.pos~", []byte("new position"))
	writeFile(t, f.FS, "a.pos", []byte("old"))
	if err := f.FS.Rename("new.pos~", "a.pos"); err != nil {
		t.Fatalf("Rename over an existing file: %v", err)
	}
	wantContent(t, f.FS, "a.pos", []byte("new position"))
	wantMissing(t, f.FS, "new.pos~")
	wantList(t, f.FS, "a.pos")
}

func testSpoolRenameFailed(t *testing.T, f SpoolFSFixture) {
	// Into failed/, over an existing quarantined file of that name.
	writeFile(t, f.FS, "a.buf", []byte("whole file"))
	writeFile(t, f.FS, "failed/a.buf", []byte("older"))
	if err := f.FS.Rename("a.buf", "failed/a.buf"); err != nil {
		t.Fatalf("Rename into failed/: %v", err)
	}
	wantContent(t, f.FS, "failed/a.buf", []byte("whole file"))
	wantMissing(t, f.FS, "a.buf")
	wantList(t, f.FS)
	// Within failed/: the quarantine writes "<name>~" and renames it into place.
	writeFile(t, f.FS, "failed/b.corrupt~", []byte("raw"))
	writeFile(t, f.FS, "failed/b.corrupt", []byte("stale"))
	if err := f.FS.Rename("failed/b.corrupt~", "failed/b.corrupt"); err != nil {
		t.Fatalf("Rename within failed/: %v", err)
	}
	wantContent(t, f.FS, "failed/b.corrupt", []byte("raw"))
	wantMissing(t, f.FS, "failed/b.corrupt~")
}

func testSpoolRenameMissing(t *testing.T, f SpoolFSFixture) {
	writeFile(t, f.FS, "target", []byte("untouched"))
	for _, from := range []string{"nope", "failed/nope"} {
		if err := f.FS.Rename(from, "target"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Rename(%q) of a missing file = %v, want an error satisfying fs.ErrNotExist", from, err)
		}
	}
	wantContent(t, f.FS, "target", []byte("untouched"))
}

func testSpoolRenameSelf(t *testing.T, f SpoolFSFixture) {
	for _, name := range []string{"a.buf", "failed/a.buf"} {
		writeFile(t, f.FS, name, []byte("same"))
		if err := f.FS.Rename(name, name); err != nil {
			t.Fatalf("Rename(%q) onto itself: %v", name, err)
		}
		wantContent(t, f.FS, name, []byte("same"))
	}
}

func testSpoolRemove(t *testing.T, f SpoolFSFixture) {
	for _, name := range []string{"a.buf", "failed/a.buf"} {
		writeFile(t, f.FS, name, []byte("x"))
		if err := f.FS.Remove(name); err != nil {
			t.Fatalf("Remove(%q): %v", name, err)
		}
		wantMissing(t, f.FS, name)
		if err := f.FS.Remove(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("second Remove(%q) = %v, want an error satisfying fs.ErrNotExist", name, err)
		}
	}
	wantList(t, f.FS)
	// The name is free again.
	writeFile(t, f.FS, "a.buf", []byte("again"))
	wantContent(t, f.FS, "a.buf", []byte("again"))
}

// badNames could reach outside the directory, or name no file, if an implementation
// took them as paths.
func badNames() []string {
	return []string{
		"", ".", "..", "../x", "./x", "a/b", "sub/../x", "x/", `a\b`, `..\x`, "x\x00",
		"failed/", "failed/.", "failed/..", "failed/../x", "failed/a/b", "failed//x", "failed/failed/x",
		string(filepath.Separator) + "x",
		filepath.Join(os.TempDir(), "queen-porttest-escape"), // absolute
	}
}

func testSpoolBadNames(t *testing.T, f SpoolFSFixture) {
	// Files an unchecked "failed/../x" or "sub/../x" would reach.
	writeFile(t, f.FS, "x", []byte("inside"))
	writeFile(t, f.FS, "failed/x", []byte("quarantined"))
	f.Mkdir(t, "sub")
	f.Mkdir(t, "failed/failed")
	// A rejection is neither "missing" nor "exists": the spool takes a not-exist from
	// Remove as "already gone" and would carry on as if the call had worked.
	rejected := func(t *testing.T, op, name string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
			t.Errorf("%s(%q) = %v, want a rejection of the name", op, name, err)
		}
	}
	for _, name := range badNames() {
		w, err := f.FS.Create(name)
		if err == nil {
			_ = w.Close()
		}
		rejected(t, "Create", name, err)
		_, err = f.FS.ReadFile(name)
		rejected(t, "ReadFile", name, err)
		rejected(t, "Remove", name, f.FS.Remove(name))
		rejected(t, "Rename to", name, f.FS.Rename("x", name))
		rejected(t, "Rename from", name, f.FS.Rename(name, "y"))
	}
	// Nothing moved, nothing appeared.
	wantContent(t, f.FS, "x", []byte("inside"))
	wantContent(t, f.FS, "failed/x", []byte("quarantined"))
	wantList(t, f.FS, "x")
	if l, ok := f.FS.(ports.SpoolFailedLister); ok {
		got, err := l.ListFailed()
		if err != nil || !maps.Equal(got, map[string]int64{"x": int64(len("quarantined"))}) {
			t.Fatalf("ListFailed = %v, %v; want only failed/x", got, err)
		}
	}
}

func testSpoolFailedIsDir(t *testing.T, f SpoolFSFixture) {
	writeFile(t, f.FS, "x", []byte("data"))
	if w, err := f.FS.Create("failed"); !errors.Is(err, fs.ErrExist) {
		if err == nil {
			_ = w.Close()
		}
		t.Fatalf(`Create("failed") = %v, want an error satisfying fs.ErrExist`, err)
	}
	if got, err := f.FS.ReadFile("failed"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf(`ReadFile("failed") = %q, %v; want an error (a directory is no file)`, got, err)
	}
	if err := f.FS.Rename("x", "failed"); err == nil {
		t.Fatal(`Rename over the quarantine directory accepted`)
	}
	wantContent(t, f.FS, "x", []byte("data"))
	wantList(t, f.FS, "x")
	// It still takes files.
	if err := f.FS.Rename("x", "failed/x"); err != nil {
		t.Fatalf("Rename into failed/ afterwards: %v", err)
	}
	wantContent(t, f.FS, "failed/x", []byte("data"))
}

func testSpoolSyncDir(t *testing.T, f SpoolFSFixture) {
	if err := f.FS.SyncDir(); err != nil {
		t.Fatalf("SyncDir of an empty directory: %v", err)
	}
	writeFile(t, f.FS, "a.tmp", []byte("a"))
	writeFile(t, f.FS, "b.tmp", []byte("b"))
	if err := f.FS.Rename("a.tmp", "a.buf"); err != nil {
		t.Fatal(err)
	}
	if err := f.FS.Rename("b.tmp", "failed/b.tmp"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.FS, "c", nil)
	if err := f.FS.Remove("c"); err != nil {
		t.Fatal(err)
	}
	if err := f.FS.SyncDir(); err != nil {
		t.Fatalf("SyncDir after creations, renames and a removal: %v", err)
	}
	wantList(t, f.FS, "a.buf")
	wantContent(t, f.FS, "failed/b.tmp", []byte("b"))
}

func testSpoolListFailed(t *testing.T, f SpoolFSFixture) {
	l, ok := f.FS.(ports.SpoolFailedLister)
	if !ok {
		t.Skipf("%T does not implement ports.SpoolFailedLister (optional)", f.FS)
	}
	list := func() map[string]int64 {
		t.Helper()
		got, err := l.ListFailed()
		if err != nil {
			t.Fatalf("ListFailed: %v", err)
		}
		return got
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("ListFailed of a fresh directory = %v, want nothing", got)
	}
	writeFile(t, f.FS, "failed/a.corrupt", []byte("12345"))
	writeFile(t, f.FS, "failed/a.corrupt.reason", nil)
	writeFile(t, f.FS, "plain.buf", []byte("not quarantined"))
	f.Mkdir(t, "failed/sub")
	w, err := f.FS.Create("failed/b.rejected~") // being written: its size so far
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"a.corrupt": 5, "a.corrupt.reason": 0, "b.rejected~": 3}
	if got := list(); !maps.Equal(got, want) {
		t.Fatalf("ListFailed = %v, want %v", got, want)
	}
	if err := f.FS.Remove("failed/a.corrupt.reason"); err != nil {
		t.Fatal(err)
	}
	delete(want, "a.corrupt.reason")
	if got := list(); !maps.Equal(got, want) {
		t.Fatalf("ListFailed after a removal = %v, want %v", got, want)
	}
}
