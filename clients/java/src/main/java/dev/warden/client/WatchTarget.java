package dev.warden.client;

/** What a watch follows: one resource by its exact name, or every resource under a prefix. */
public sealed interface WatchTarget permits WatchTarget.Resource, WatchTarget.Prefix {
  /** One resource, by its exact name. */
  record Resource(String name) implements WatchTarget {}

  /** Every resource whose name starts with {@code prefix} ("" = all). */
  record Prefix(String prefix) implements WatchTarget {}

  /** One resource. */
  static WatchTarget resource(String name) {
    return new Resource(name);
  }

  /** Every resource under a prefix. */
  static WatchTarget prefix(String prefix) {
    return new Prefix(prefix);
  }
}
