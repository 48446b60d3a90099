package dev.warden.client.internal;

import dev.warden.client.internal.pending.CancelWaitProto.CancelWaitRequest;
import dev.warden.client.internal.pending.CancelWaitProto.CancelWaitResponse;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;

/**
 * {@code warden.v1.Lock/CancelWait}, called by its full name with the messages of {@code
 * src/main/proto/pending/cancel_wait.proto} (wire-identical to the server's). A server that does
 * not serve it answers {@code UNIMPLEMENTED}; the client then treats the cancel as unsupported.
 */
public final class CancelWaitRpc {
  /** The RPC's full name. */
  public static final String NAME = "warden.v1.Lock/CancelWait";

  /** The method descriptor. */
  public static final MethodDescriptor<CancelWaitRequest, CancelWaitResponse> METHOD =
      MethodDescriptor.<CancelWaitRequest, CancelWaitResponse>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName(NAME)
          .setRequestMarshaller(ProtoUtils.marshaller(CancelWaitRequest.getDefaultInstance()))
          .setResponseMarshaller(ProtoUtils.marshaller(CancelWaitResponse.getDefaultInstance()))
          .build();

  private CancelWaitRpc() {}
}
