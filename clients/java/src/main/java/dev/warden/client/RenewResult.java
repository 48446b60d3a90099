package dev.warden.client;

/**
 * An acknowledged renew or keep-alive: the lease's countdown restarted with its full TTL once
 * the renew committed (S4).
 *
 * @param leaseId the lease
 * @param ttlMs its TTL (0 when not live)
 * @param live false when the server no longer has the lease (a keep-alive's answer)
 * @param sentAtNanos {@link System#nanoTime()} read just before the acknowledged attempt was
 *     sent: the lease is certainly live until this + {@link Validity#ofTtlMs} (S5)
 */
public record RenewResult(long leaseId, long ttlMs, boolean live, long sentAtNanos) {}
