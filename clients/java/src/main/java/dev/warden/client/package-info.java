/**
 * The Warden client (docs/semantics.md S1..S8, L1..L4), a map of its public types:
 *
 * <ul>
 *   <li>{@link dev.warden.client.WardenClient}: connects to endpoints, follows the leader; the
 *       raw lock, lease, status, watch and cluster calls, each also async. Options: {@link
 *       dev.warden.client.ClientOptions}, {@link dev.warden.client.TlsOptions}.
 *   <li>{@link dev.warden.client.Session} ({@link dev.warden.client.SessionOptions}, {@link
 *       dev.warden.client.SessionClock}, {@link dev.warden.client.Validity}): a lease kept alive,
 *       its {@code validUntil}, {@code check()} and lost signal ({@link
 *       dev.warden.client.LostReason}).
 *   <li>{@link dev.warden.client.Lock} and {@link dev.warden.client.PendingLock}: a held lock
 *       with its fencing token; a lock being taken, abandoned with {@code CancelWait} ({@link
 *       dev.warden.client.CancelWaitResult}).
 *   <li>{@link dev.warden.client.Election}, {@link dev.warden.client.Leadership}, {@link
 *       dev.warden.client.Observer}, {@link dev.warden.client.LeaderInfo}: elections.
 *   <li>{@link dev.warden.client.Watcher}, {@link dev.warden.client.WatchTarget}, {@link
 *       dev.warden.client.WatchEvent}: watches in commit order.
 *   <li>Results of the raw calls: {@link dev.warden.client.AcquireResult}, {@link
 *       dev.warden.client.LeaseGrant}, {@link dev.warden.client.RenewResult}, {@link
 *       dev.warden.client.ReleaseResult}, {@link dev.warden.client.LockStatus}, {@link
 *       dev.warden.client.Listing}, {@link dev.warden.client.LeaseInfo}, {@link
 *       dev.warden.client.ClusterStatus}, {@link dev.warden.client.Queued}.
 *   <li>Errors: {@link dev.warden.client.WardenException} and its subclasses, typed by the
 *       status's {@code google.rpc.ErrorInfo} reason ({@link dev.warden.client.ErrorReason}) or
 *       the not-granted reason ({@link dev.warden.client.NotGrantedReason}).
 * </ul>
 *
 * <p>{@code dev.warden.client.internal} holds the machinery (retry loop, request ids, streams);
 * it is not API.
 */
package dev.warden.client;
