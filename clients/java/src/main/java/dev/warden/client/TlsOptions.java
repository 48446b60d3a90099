package dev.warden.client;

import io.grpc.ChannelCredentials;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettySslContextChannelCredentials;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Mutual TLS to a cluster whose nodes run with {@code --certs-dir}: the CA that signed the node
 * certificates, and this client's certificate and key (PEM; the key PKCS#8, as {@code warden
 * cert create-client} writes it). The certificate names the principal the server acts for. The
 * server's identity is checked against the endpoint's host (the node certificates carry the
 * hosts they are valid for). TLS itself is grpc-java's: a Netty {@code SslContext} from {@code
 * GrpcSslContexts} (grpc-netty-shaded), TLS 1.3 only, as the server serves.
 *
 * <p>Two ways, as the CLI takes them: {@link #of(Path, Path, Path)} with the three files, or
 * {@link #fromCertsDir(Path, String)} with a certs dir and a user ({@code ca.crt}, {@code
 * client.USER.crt}, {@code client.USER.key}). {@link #serverOnly(Path)} checks the server
 * without presenting a certificate (e.g. for gRPC health checks).
 */
public final class TlsOptions {
  private final Path caCert;
  private final Path clientCert;
  private final Path clientKey;

  private TlsOptions(Path caCert, Path clientCert, Path clientKey) {
    this.caCert = caCert;
    this.clientCert = clientCert;
    this.clientKey = clientKey;
  }

  /** The CA bundle, this client's certificate and its private key, as files. */
  public static TlsOptions of(Path caCert, Path clientCert, Path clientKey) {
    return new TlsOptions(caCert, clientCert, clientKey);
  }

  /**
   * A certs dir and a user, as {@code warden --certs-dir DIR --user NAME}: {@code DIR/ca.crt},
   * {@code DIR/client.NAME.crt}, {@code DIR/client.NAME.key}.
   */
  public static TlsOptions fromCertsDir(Path certsDir, String user) {
    return new TlsOptions(
        certsDir.resolve("ca.crt"),
        certsDir.resolve("client." + user + ".crt"),
        certsDir.resolve("client." + user + ".key"));
  }

  /** Checks the server against {@code caCert} and presents no client certificate. */
  public static TlsOptions serverOnly(Path caCert) {
    return new TlsOptions(caCert, null, null);
  }

  /** The CA bundle file. */
  public Path caCert() {
    return caCert;
  }

  /** This client's certificate file, if it presents one. */
  public Optional<Path> clientCert() {
    return Optional.ofNullable(clientCert);
  }

  /** This client's key file, if it presents a certificate. */
  public Optional<Path> clientKey() {
    return Optional.ofNullable(clientKey);
  }

  /**
   * The channel credentials (read now).
   *
   * @throws TlsConfigException naming the file that is missing, unreadable or not valid PEM
   */
  public ChannelCredentials credentials() {
    readable(caCert, "CA certificate");
    SslContextBuilder builder = GrpcSslContexts.forClient().protocols("TLSv1.3");
    try {
      builder.trustManager(caCert.toFile());
    } catch (IllegalArgumentException e) {
      throw new TlsConfigException(caCert, "not a PEM CA certificate bundle: " + e.getMessage(),
          e);
    }
    if (clientCert != null) {
      readable(clientCert, "client certificate");
      readable(clientKey, "client key");
      try {
        builder.keyManager(clientCert.toFile(), clientKey.toFile());
      } catch (IllegalArgumentException e) {
        throw new TlsConfigException(clientCert,
            "certificate or key " + clientKey + " is not valid PEM (the key must be PKCS#8): "
                + e.getMessage(), e);
      }
    }
    SslContext context;
    try {
      context = builder.build();
    } catch (IOException | RuntimeException e) {
      throw new TlsConfigException(clientCert != null ? clientCert : caCert,
          "cannot build the TLS context from " + caCert
              + (clientCert != null ? ", " + clientCert + " and " + clientKey : "") + ": "
              + e.getMessage(), e);
    }
    return NettySslContextChannelCredentials.create(context);
  }

  private static void readable(Path file, String what) {
    if (!Files.isRegularFile(file)) {
      throw new TlsConfigException(file, what + " not found", null);
    }
    if (!Files.isReadable(file)) {
      throw new TlsConfigException(file, what + " is not readable", null);
    }
  }

  @Override
  public String toString() {
    // Paths only: never the key's contents.
    return "TlsOptions{ca=" + caCert + ", cert=" + clientCert + ", key=" + clientKey + "}";
  }
}
