package dev.warden.client;

import java.time.Duration;
import java.util.Optional;

/**
 * How a {@link WardenClient} calls the cluster. Defaults: a whole call may take 5 s (a waiting
 * acquire: its wait plus that), opening a connection (TCP and TLS handshake) 2 s, one attempt
 * 500 ms once connected, the pause between two rounds over the endpoints at most 200 ms,
 * plaintext.
 */
public final class ClientOptions {
  private final Duration deadline;
  private final Duration attemptTimeout;
  private final Duration connectTimeout;
  private final Duration backoffCap;
  private final TlsOptions tls;

  private ClientOptions(Builder b) {
    this.deadline = b.deadline;
    this.attemptTimeout = b.attemptTimeout;
    this.connectTimeout = b.connectTimeout;
    this.backoffCap = b.backoffCap;
    this.tls = b.tls;
  }

  /** The defaults. */
  public static ClientOptions defaults() {
    return builder().build();
  }

  /** A builder starting from the defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** The longest a call may take, retries included (a waiting acquire: its wait plus this). */
  public Duration deadline() {
    return deadline;
  }

  /** The longest one attempt waits for an answer before the next endpoint is tried. */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /**
   * The longest an attempt waits for its connection to open (TCP connect and TLS handshake)
   * before the next endpoint is tried; the attempt timeout starts once it is open. A connection
   * not yet open keeps opening in the background for the next round. Never beyond the call's
   * deadline.
   */
  public Duration connectTimeout() {
    return connectTimeout;
  }

  /** The longest pause between two rounds over the endpoints (backoff from 25 ms doubles). */
  public Duration backoffCap() {
    return backoffCap;
  }

  /** Mutual TLS, or empty for plaintext. */
  public Optional<TlsOptions> tls() {
    return Optional.ofNullable(tls);
  }

  /** A builder with these options. */
  public Builder toBuilder() {
    return new Builder().deadline(deadline).attemptTimeout(attemptTimeout)
        .connectTimeout(connectTimeout).backoffCap(backoffCap).tls(tls);
  }

  /** Builds {@link ClientOptions}; each duration must be positive. */
  public static final class Builder {
    private Duration deadline = Duration.ofSeconds(5);
    private Duration attemptTimeout = Duration.ofMillis(500);
    private Duration connectTimeout = Duration.ofSeconds(2);
    private Duration backoffCap = Duration.ofMillis(200);
    private TlsOptions tls;

    private Builder() {}

    /** See {@link ClientOptions#deadline()}. */
    public Builder deadline(Duration deadline) {
      this.deadline = positive("deadline", deadline);
      return this;
    }

    /** See {@link ClientOptions#attemptTimeout()}. */
    public Builder attemptTimeout(Duration attemptTimeout) {
      this.attemptTimeout = positive("attemptTimeout", attemptTimeout);
      return this;
    }

    /** See {@link ClientOptions#connectTimeout()}. */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = positive("connectTimeout", connectTimeout);
      return this;
    }

    /** See {@link ClientOptions#backoffCap()}. */
    public Builder backoffCap(Duration backoffCap) {
      this.backoffCap = positive("backoffCap", backoffCap);
      return this;
    }

    /** Mutual TLS (null: plaintext). */
    public Builder tls(TlsOptions tls) {
      this.tls = tls;
      return this;
    }

    /** The options. */
    public ClientOptions build() {
      return new ClientOptions(this);
    }

    private static Duration positive(String name, Duration d) {
      if (d == null || d.isZero() || d.isNegative()) {
        throw new InvalidArgumentException(name, "must be greater than 0; got " + d);
      }
      return d;
    }
  }
}
