package dev.warden.client;

/**
 * An election's leader as the cluster reports it.
 *
 * @param leaseId the leader's session lease
 * @param fencingToken the token of its term of office: larger than every earlier leader's
 * @param value the value it published (campaign or proclaim)
 */
public record LeaderInfo(long leaseId, long fencingToken, String value) {}
