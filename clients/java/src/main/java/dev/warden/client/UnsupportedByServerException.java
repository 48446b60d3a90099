package dev.warden.client;

import io.grpc.Status;
import java.util.Map;

/**
 * The server does not serve an RPC this client needs (gRPC {@code UNIMPLEMENTED}): it is older
 * than the client. {@link #rpc()} names the RPC, e.g. {@code warden.v1.Lock/CancelWait}.
 */
public class UnsupportedByServerException extends WardenException {
  private static final long serialVersionUID = 1L;

  private final String rpc;

  /** {@code rpc} is the full method name; {@code message} the server's. */
  public UnsupportedByServerException(String rpc, String message) {
    super(
        "the server does not serve " + rpc + " (UNIMPLEMENTED: " + message + ")",
        Status.Code.UNIMPLEMENTED,
        "",
        Map.of());
    this.rpc = rpc;
  }

  /** The RPC's full name. */
  public String rpc() {
    return rpc;
  }
}
