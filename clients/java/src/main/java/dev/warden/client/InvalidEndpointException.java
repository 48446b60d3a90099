package dev.warden.client;

/** An endpoint is not {@code host:port}; nothing was sent. */
public class InvalidEndpointException extends InvalidArgumentException {
  private static final long serialVersionUID = 1L;

  private final String endpoint;

  /** {@code endpoint} as given, and what is wrong with it. */
  public InvalidEndpointException(String endpoint, String message) {
    super("endpoints", "\"" + endpoint + "\": " + message);
    this.endpoint = endpoint;
  }

  /** The endpoint as given. */
  public String endpoint() {
    return endpoint;
  }
}
