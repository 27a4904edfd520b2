package ports

import "errors"

// ErrSpoolLocked is returned (wrapped) by SpoolFS.Lock when another process, or another
// handle in this process, already owns the spool directory. Two owners appending to and
// deleting from one directory would replay records twice or delete unreplayed ones.
var ErrSpoolLocked = errors.New("spool directory is locked by another process")

// SpoolFS is one spool directory (docs/design.md "The pieces"): the durable home of
// pushes the database could not take. Names are plain file names in the directory, or
// "failed/<name>" for the quarantine subdirectory; an adapter rejects anything else (no
// other separators, no "..") so a name can never escape the directory.
//
// Durability is explicit: nothing written is assumed to survive a crash until
// SpoolFile.Sync returned, and no created, renamed or removed name until SyncDir
// returned. The core orders its calls so that a crash at any point loses no acknowledged
// record.
type SpoolFS interface {
	// Lock takes the directory's exclusive owner lock without blocking. It returns
	// ErrSpoolLocked (possibly wrapped) when another owner holds it; unlock releases it.
	Lock() (unlock func() error, err error)
	// List returns the names of the regular files directly in the directory (not those
	// of failed/, not subdirectories), in any order.
	List() ([]string, error)
	// Create creates a new file for writing. It fails when the name exists, with an error
	// satisfying errors.Is(err, fs.ErrExist).
	Create(name string) (SpoolFile, error)
	// ReadFile returns the whole content of a file; a missing file is an error satisfying
	// errors.Is(err, fs.ErrNotExist).
	ReadFile(name string) ([]byte, error)
	// Rename atomically renames a file within the directory or into failed/, replacing
	// the target if it exists.
	Rename(from, to string) error
	// Remove deletes a file; a missing file is an error satisfying
	// errors.Is(err, fs.ErrNotExist).
	Remove(name string) error
	// SyncDir makes the directory's entries durable (fsync of the directory, and of
	// failed/ when it exists): creations, renames and removals made before the call.
	SyncDir() error
}

// SpoolFile is a file being written by the spool.
type SpoolFile interface {
	Write(p []byte) (int, error)
	// Sync makes every byte written so far durable (fsync).
	Sync() error
	Close() error
}

// SpoolFailedLister is optionally implemented by a SpoolFS so the spool can report, from
// its start, the quarantined files an earlier process left in failed/ (Stats.FailedFiles,
// Stats.FailedBytes). Without it those figures count only this process's quarantines.
type SpoolFailedLister interface {
	// ListFailed returns the regular files of failed/ and their sizes in bytes.
	ListFailed() (map[string]int64, error)
}

// SpoolDirs opens spool directories by path: the batch-drain job drains directories
// other processes wrote (their brokers are gone, or on shared storage).
type SpoolDirs interface {
	// Open returns the directory at path as a SpoolFS, creating it when missing.
	Open(path string) (SpoolFS, error)
}
