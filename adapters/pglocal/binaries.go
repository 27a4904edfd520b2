package pglocal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries is wrapped in the error Start returns when the PostgreSQL server binaries cannot be
// found. Its message tells the user both ways out: install the binaries or point at a server.
var ErrNoBinaries = errors.New("pglocal: PostgreSQL server binaries (initdb, postgres) not found; " +
	"install them (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) " +
	"or point at an existing server with QUEEN_PG_URL or PG_HOST/PG_PORT/PG_USER/PG_PASSWORD/PG_DB")

// debianBinGlob is where Debian and Ubuntu install the server binaries: unlike the client tools
// they are not linked into /usr/bin, so PATH alone usually does not find them.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinDir returns the directory holding initdb and postgres.
func findBinDir(explicit string) (string, error) {
	if explicit != "" {
		if hasServerBinaries(explicit) {
			return explicit, nil
		}
		return "", fmt.Errorf("%w (BinDir %s holds no initdb and postgres)", ErrNoBinaries, explicit)
	}
	if dir, ok := binDirFromPath(); ok {
		return dir, nil
	}
	for _, dir := range debianBinDirs() {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w (searched PATH and %s)", ErrNoBinaries, debianBinGlob)
}

// binDirFromPath returns the directory of initdb on PATH. Symlinks are resolved because a link
// such as /usr/local/bin/initdb usually has no postgres next to it, while its target does.
func binDirFromPath() (string, bool) {
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", false
	}
	for _, p := range []string{resolve(initdb), initdb} {
		if dir := filepath.Dir(p); hasServerBinaries(dir) {
			return dir, true
		}
	}
	return "", false
}

func resolve(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// debianBinDirs lists the Debian-style binary directories, newest major version first.
func debianBinDirs() []string {
	dirs, _ := filepath.Glob(debianBinGlob)
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	sort.SliceStable(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return dirs
}

func hasServerBinaries(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// versionOf reads the major version of the cluster in dataDir, for log messages.
func versionOf(dataDir string) string {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
