// Command lambda (binary queen-drain) is the batch-drain job: a second composition of
// the broker's core, built by its own google/wire injector (InitializeDrain) from the
// broker's providers. It replays spool directories into PostgreSQL and exits.
//
// Under AWS Lambda (a scheduled EventBridge rule invokes it) each invocation drains until
// shortly before the invocation deadline and returns the summary; whatever is left waits
// for the next run. Outside Lambda it drains once and prints the summary as JSON:
//
//	queen-drain --dir /mnt/efs/queen/broker-a --dir /mnt/efs/queen/broker-b [--max-duration 10m]
//
// A directory whose owner (a live broker, or another drain) holds its lock is skipped;
// while push maintenance is on nothing is replayed (like the brokers' drains, it waits).
// Exit status: 0 when every directory was drained, skipped or left for maintenance, 1
// when a directory failed or records remain after --max-duration, 2 on a usage or
// start-up error.
package main
