//go:build unix

package pglocal

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// serverUserName is the OS user the server runs as when we are root (PostgreSQL refuses root).
const serverUserName = "postgres"

// serverUser is the OS identity initdb and postgres run as. A nil *serverUser means "as ourselves".
type serverUser struct {
	name     string
	uid, gid uint32
}

// lookupServerUser returns nil when we are not root, and the postgres user when we are.
func lookupServerUser() (*serverUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(serverUserName)
	if err != nil {
		return nil, fmt.Errorf("pglocal: running as root, PostgreSQL needs an unprivileged OS user %q to run as: %w",
			serverUserName, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: uid of %s: %w", serverUserName, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: gid of %s: %w", serverUserName, err)
	}
	return &serverUser{name: u.Username, uid: uint32(uid), gid: uint32(gid)}, nil
}

// procAttr returns the process attributes for initdb (ownGroup false) or the postmaster (true).
// The postmaster gets its own process group so a terminal Ctrl-C, which goes to the foreground
// group, reaches only us and we can stop the server in order.
func (u *serverUser) procAttr(ownGroup bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: ownGroup}
	if u != nil {
		// Empty Groups drops root's supplementary groups in the child.
		attr.Credential = &syscall.Credential{Uid: u.uid, Gid: u.gid, Groups: []uint32{}}
	}
	return attr
}

// chown gives path to the server user; a no-op when we are not root.
func (u *serverUser) chown(path string) error {
	if u == nil {
		return nil
	}
	if err := os.Chown(path, int(u.uid), int(u.gid)); err != nil {
		return fmt.Errorf("pglocal: chown %s to %s: %w", path, u.name, err)
	}
	return nil
}

// ensureTraversable makes sure the server user can reach dir: every ancestor needs a search (x) bit
// that applies to it. Missing ones get o+x only (not read), which lets the server user pass through
// without listing anything. A no-op when we are not root, since then the server runs as ourselves.
func (u *serverUser) ensureTraversable(dir string, log *slog.Logger) error {
	if u == nil {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		if err := u.makeSearchable(p, log); err != nil {
			return err
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

func (u *serverUser) makeSearchable(dir string, log *slog.Logger) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("pglocal: stat %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	mode := fi.Mode().Perm()
	switch {
	case st.Uid == u.uid && mode&0o100 != 0,
		st.Gid == u.gid && mode&0o010 != 0,
		mode&0o001 != 0:
		return nil
	}
	log.Warn("pglocal: adding o+x so the server user can reach its data directory", "dir", dir, "user", u.name)
	if err := os.Chmod(dir, fi.Mode()|0o001); err != nil {
		return fmt.Errorf("pglocal: chmod o+x %s: %w", dir, err)
	}
	return nil
}

// signalPID sends sig to a process we did not start through exec (a leftover postmaster).
func signalPID(pid int, sig syscall.Signal) error {
	return syscall.Kill(pid, sig)
}

// processGone reports whether pid no longer runs. A zombie counts as gone: after its parent died,
// a container's pid 1 may never reap it, yet it holds nothing any more.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false // no /proc (not Linux): kill said it exists
	}
	// The state is the first field after the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// canInspect reports whether process identities can be checked (Linux /proc).
func canInspect() bool {
	_, err := os.Readlink("/proc/self/exe")
	return err == nil
}

// isPostgresIn reports whether pid is a running postgres process whose working directory is dir
// (postgres chdirs into its data directory, so this identifies the cluster it serves).
func isPostgresIn(pid int, dir string) bool {
	if processGone(pid) {
		return false
	}
	proc := fmt.Sprintf("/proc/%d", pid)
	exe, err := os.Readlink(proc + "/exe")
	if err != nil {
		return false
	}
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil {
		return false
	}
	// A binary replaced by a package upgrade shows as "/path/postgres (deleted)".
	exe = strings.TrimSuffix(exe, " (deleted)")
	return filepath.Base(exe) == "postgres" && cwd == dir
}

// anyPostgresIn reports whether any postgres process (postmaster or orphaned backend) runs in dir.
func anyPostgresIn(dir string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && isPostgresIn(pid, dir) {
			return true
		}
	}
	return false
}
