package dev.warden.client;

import java.nio.file.Path;

/** A TLS file could not be read or used; {@link #file()} names it. Nothing was sent. */
public class TlsConfigException extends WardenException {
  private static final long serialVersionUID = 1L;

  private final transient Path file;

  /** {@code file}: the file at fault; {@code message}: what is wrong with it. */
  public TlsConfigException(Path file, String message, Throwable cause) {
    super("tls: " + file + ": " + message, null, "", java.util.Map.of(), cause);
    this.file = file;
  }

  /** The file at fault. */
  public Path file() {
    return file;
  }
}
