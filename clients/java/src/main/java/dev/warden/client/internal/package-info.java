/**
 * The client's machinery (not API). Imports run one way: the public package uses this one,
 * never the reverse except for the public types it returns and throws.
 *
 * <ul>
 *   <li>{@link dev.warden.client.internal.Engine}: endpoints, channels, the cached leader, the
 *       client id, timers, and the one retry loop (leader hints, rotation, backoff, deadlines);
 *       {@link dev.warden.client.internal.CallPlan} decides where the next attempt goes (pure).
 *   <li>{@link dev.warden.client.internal.Endpoint}, {@link dev.warden.client.internal.Node}: an
 *       address, and an address with its channel.
 *   <li>{@link dev.warden.client.internal.RequestIds}: request ids, the acknowledged watermark
 *       and the in-flight window (S7).
 *   <li>{@link dev.warden.client.internal.Failure}: a failed attempt judged (retryable or final)
 *       and typed from its status details.
 *   <li>{@link dev.warden.client.internal.Attempts}, {@link
 *       dev.warden.client.internal.AcquireStream}, {@link
 *       dev.warden.client.internal.KeepAliveStream}: one attempt of a unary call, of the acquire
 *       stream, of a keep-alive on the lease's stream.
 *   <li>{@link dev.warden.client.internal.Acquisition}: one acquire with one request id, re-sent
 *       after a dropped stream, abandoned with {@code CancelWait} (S8).
 * </ul>
 */
package dev.warden.client.internal;
