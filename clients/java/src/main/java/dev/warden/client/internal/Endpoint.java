package dev.warden.client.internal;

import java.util.Optional;

/**
 * A node address, {@code host:port}: an endpoint given to the client or a leader hint from the
 * {@code warden-leader} metadata entry. {@link #toString()} is the canonical form, the key of
 * the channel cache.
 *
 * @param host a DNS name, an IPv4 address, or an IPv6 address in brackets ({@code [::1]})
 * @param port 1..=65535
 */
public record Endpoint(String host, int port) {

  /** Thrown by {@link #parse} with what is wrong with the text. */
  public static final class InvalidEndpoint extends Exception {
    private static final long serialVersionUID = 1L;

    InvalidEndpoint(String message) {
      super(message);
    }
  }

  /**
   * Parses {@code host:port}; an {@code http://} or {@code https://} prefix and a trailing
   * {@code /} are accepted and dropped (the transport is chosen by the client's TLS options, not
   * by the scheme).
   *
   * @throws InvalidEndpoint naming what is wrong: empty, no port, a port outside 1..=65535, an
   *     IPv6 host without brackets, a character that has no place in a host
   */
  public static Endpoint parse(String raw) throws InvalidEndpoint {
    String text = raw == null ? "" : raw.trim();
    for (String scheme : new String[] {"http://", "https://"}) {
      if (text.startsWith(scheme)) {
        text = text.substring(scheme.length());
      }
    }
    if (text.contains("://")) {
      throw new InvalidEndpoint("only host:port (or http://host:port) is supported");
    }
    while (text.endsWith("/")) {
      text = text.substring(0, text.length() - 1);
    }
    if (text.isEmpty()) {
      throw new InvalidEndpoint("empty address; expected host:port");
    }
    int colon = text.lastIndexOf(':');
    if (colon < 0) {
      throw new InvalidEndpoint("missing port; expected host:port");
    }
    String host = text.substring(0, colon);
    String port = text.substring(colon + 1);
    if (host.isEmpty() || host.equals("[]")) {
      throw new InvalidEndpoint("missing host; expected host:port");
    }
    for (char c : new char[] {'/', '?', '#', '@', ' '}) {
      if (host.indexOf(c) >= 0) {
        throw new InvalidEndpoint("host contains '" + c + "', which has no place in host:port");
      }
    }
    if (host.contains(":") && !(host.startsWith("[") && host.endsWith("]"))) {
      throw new InvalidEndpoint("an IPv6 host must be in brackets, e.g. [::1]:7001");
    }
    int number;
    try {
      number = Integer.parseInt(port);
    } catch (NumberFormatException e) {
      throw new InvalidEndpoint("port \"" + port + "\" is not a number in 1..=65535");
    }
    if (number < 1 || number > 65535) {
      throw new InvalidEndpoint("port " + number + " is outside 1..=65535");
    }
    return new Endpoint(host, number);
  }

  /** {@link #parse}, or empty for text that is not an address (a bad hint is never followed). */
  public static Optional<Endpoint> tryParse(String raw) {
    try {
      return Optional.of(parse(raw));
    } catch (InvalidEndpoint e) {
      return Optional.empty();
    }
  }

  /** The host as a socket API takes it: an IPv6 address without its brackets. */
  public String socketHost() {
    return host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
  }

  @Override
  public String toString() {
    return host + ":" + port;
  }
}
