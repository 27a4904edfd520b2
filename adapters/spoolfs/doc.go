// Package spoolfs is the operating-system implementation of ports.SpoolFS: one spool
// directory on a local (or shared) file system, with a failed/ subdirectory for
// quarantined records.
//
// Ownership is a flock(2) on the LOCK file in the directory, taken LOCK_EX|LOCK_NB and
// held by keeping the file open: the kernel releases it when the process dies, so a
// crashed broker never leaves a stale lock, and because flock locks belong to the open
// file description, a second FS on the same directory conflicts even inside one process.
// flock is advisory and, on NFS, emulated with byte-range locks by Linux; on EFS and
// other NFSv4 mounts that still excludes a second broker or a drain job.
//
// Durability is what core/spool asks for, no more: File.Sync is fsync(2) and SyncDir
// fsyncs the directory (and failed/), which is what makes a creation, rename or removal
// survive a power loss on Linux file systems.
//
// Names are validated so that none escapes the directory: a plain name, or "failed/"
// followed by a plain name.
package spoolfs
