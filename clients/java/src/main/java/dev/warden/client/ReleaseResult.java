package dev.warden.client;

/**
 * The answer to a release.
 *
 * @param resource the resource
 * @param leaseId the lease that held it
 * @param released true when this call ended the grant (false: a retry of a release that had
 *     already applied)
 */
public record ReleaseResult(String resource, long leaseId, boolean released) {}
