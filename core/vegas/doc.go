// Package vegas is an adaptive concurrency limit in the style of TCP Vegas, used as the
// push lane's permit pool: a fusion shard may fire a bundle only while it holds a permit.
//
// The limit moves between Min and Max from round-trip samples. minRTT approximates the
// uncontended round trip; with limit L in flight and a sample rtt, Vegas estimates the
// number of requests queued in the database as
//
//	queued = L × (1 − minRTT/rtt)
//
// Fewer than Alpha queued means there is spare capacity: the limit grows by one (only
// while the limit was actually used, so an idle lane does not inflate it). More than Beta
// queued means requests wait inside PostgreSQL: the limit shrinks by one. A failed call
// shrinks it by 10%. minRTT is re-learnt every ProbeEvery samples because the uncontended
// latency of a database changes with its data and its neighbours.
//
// TryAcquireIf claims a permit together with the work it is for, under the limiter's
// lock, so a permit is never counted as used for work that vanished meanwhile.
//
// Why this matters for fusion: permits are what makes the lane "contended". While all
// permits are out, pushes accumulate into larger segments and bundles instead of queueing
// more concurrent transactions inside PostgreSQL, so load raises messages per commit
// rather than commits per second.
package vegas
