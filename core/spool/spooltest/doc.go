// Package spooltest is the crash and damage suite of core/spool, run against every
// ports.SpoolFS the spool is used with: core/spool's tests run it over the in-memory
// fault-injecting file system (adapters/memory), adapters/spoolfs's over a real
// directory (t.TempDir()), so what the spool promises after a crash, a torn write or bit
// rot is checked on the file system it really runs on, not only on the fake.
//
// The scenarios are those a real directory can reproduce from a test: a torn tail (the
// last file truncated, or followed by partial, zero or garbage bytes), a corrupt record
// or header (bytes flipped), an unsupported format version, a damaged position file,
// reopening after Close, reopening after the process died (Env.Kill), quarantine to
// failed/ and the state Open rebuilds. Scenarios that need a power loss in the middle of
// an fsync, or injected I/O errors, stay with the in-memory tests of core/spool.
//
// The suite reaches the files behind the spool's back through the hooks of Env, and
// builds what it needs of the on-disk format (frame offsets, a header of another
// version, a position file) from the layout core/spool's doc.go documents, so a change
// of that layout without a change of its documentation fails here.
//
// Non-test code here imports only core/spool, ports and the standard library (core's
// dependency rule): the adapters run it from their own tests.
package spooltest
