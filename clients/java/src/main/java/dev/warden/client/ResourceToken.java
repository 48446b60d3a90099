package dev.warden.client;

/**
 * One resource of a multi-lock's grant with its own fencing token (docs/semantics.md
 * "Multi-locks").
 *
 * @param resource the resource
 * @param fencingToken larger than every token issued before it for this resource (S2)
 */
public record ResourceToken(String resource, long fencingToken) {}
