// Package warden is the Go client of Warden, a distributed lock service:
// leases with fencing tokens, a fair server-side queue, sessions, elections
// and watches over a Raft cluster.
//
// It keeps the promises of the reference (Rust) client, as written in
// docs/semantics.md and checked by clients/conformance:
//
//   - Leader following (L3): a call goes to the last known leader; a
//     follower's Unavailable names the leader (`warden-leader`) and the call
//     is re-sent there at once; an unreachable node sends it to the next
//     endpoint; after a whole round, a pause of 25 ms doubling to 200 ms.
//     500 ms per attempt, 5 s per call by default (a waiting acquire: its
//     wait + 5 s), or the context's deadline.
//   - Exactly-once (S7): every mutating request carries the client's random
//     id, a request id that its retries reuse, and the acknowledged
//     watermark; at most 64 requests (or what the server publishes) are in
//     flight above the watermark.
//   - Honest validity (S5): a [Session]'s ValidUntil is the send time of the
//     last acknowledged keep-alive + TTL × (1 − 2ρ) − 50 ms on
//     CLOCK_BOOTTIME; Done is closed no later than that; Check fails once it
//     passed.
//   - A caller that abandons a waiting lock (its context ends) takes the
//     wait back with the server's CancelWait (S8).
//   - Typed errors ([*Error], [*NotGrantedError], [*LostError],
//     [*CompactedError]) read from the status's structured details
//     (google.rpc.ErrorInfo, google.rpc.BadRequest), never from its text.
//
// # Files
//
//   - client.go: [Client], [Options], [New], the one retry loop (do) every
//     call shares, connections.
//   - routing.go: endpoint parsing, the leader hint, the per-call plan of
//     targets and backoff (pure logic).
//   - requests.go: request ids, the acknowledged watermark and the
//     in-flight window (S7).
//   - published.go: what the server publishes in ClusterStatus (the window,
//     the election prefix), read by field name when wardenpb has it.
//   - errors.go: the typed errors and the one place a gRPC status is judged
//     (retry or final) and mapped to them.
//   - calls.go: the unary calls (status, validate, lease grant, time to
//     live, renew, revoke, release, proclaim, list, cluster status).
//   - acquire.go: [Client.Acquire] over the server-streaming Lock/Acquire.
//   - cancelwait.go: Lock/CancelWait, sent when a caller abandons an acquire.
//   - keepalive.go: the Lease/LeaseKeepAlive stream, sequence-matched.
//   - session.go: [Session], its keep-alive, its watchdog and [LostError].
//   - lock.go: [Session.Lock], TryLock, LockWithTimeout and the [Guard].
//   - election.go: [Election], [Leadership], [Observer].
//   - watch.go: [Client.Watch] and the resumable [Watcher].
//   - clock.go: [Clock], [BootClock] (CLOCK_BOOTTIME) and [Validity].
//   - tls.go: [TLSOptions] for mutual TLS.
//
// The generated messages and stubs live in package
// github.com/warden-locks/warden/clients/go/wardenpb (clients/go/gen.sh).
package warden
