package dev.warden.client.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.warden.client.TlsOptions;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(SharedCluster.class)
class C13GrpcHealthAndReflectionTest {

  // conformance: C13-grpc-health-and-reflection
  // Defends gRPC's standard services (docs/operations.md): from grpc-java's own health and
  // reflection clients (over TLS without a client certificate when the cluster has TLS), every
  // node answers SERVING once /readyz says ready, and reflection lists Warden's services.
  @Test
  void everyNodeServesHealthAndReflection(TestCluster cluster) throws Exception {
    ChannelCredentials credentials = cluster.tls()
        ? TlsOptions.serverOnly(cluster.certsDir().resolve("ca.crt")).credentials()
        : InsecureChannelCredentials.create();
    for (int id : cluster.ids()) {
      Wait.until(Duration.ofSeconds(20), "node " + id + " /readyz answers 200",
          () -> cluster.readyz(id) == 200);
      String[] hostPort = cluster.addr(id).split(":");
      ManagedChannel channel = Grpc.newChannelBuilderForAddress(hostPort[0],
          Integer.parseInt(hostPort[1]), credentials).build();
      try {
        HealthCheckResponse.ServingStatus status = health(channel);
        assertEquals(HealthCheckResponse.ServingStatus.SERVING, status, "node " + id);
        Set<String> services = reflectedServices(channel);
        for (String s : List.of("warden.v1.Lock", "warden.v1.Lease", "warden.v1.Watch",
            "warden.v1.Admin")) {
          assertTrue(services.contains(s), "node " + id + " reflection lists " + s + ": "
              + services);
        }
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  /** Health/Check with service "": SERVING within a deadline (UNIMPLEMENTED, a server without it, fails). */
  private static HealthCheckResponse.ServingStatus health(ManagedChannel channel) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    HealthCheckResponse.ServingStatus last = HealthCheckResponse.ServingStatus.UNKNOWN;
    while (System.nanoTime() < deadline) {
      try {
        last = HealthGrpc.newBlockingStub(channel).withDeadlineAfter(2, TimeUnit.SECONDS)
            .check(HealthCheckRequest.newBuilder().setService("").build()).getStatus();
        if (last == HealthCheckResponse.ServingStatus.SERVING) {
          return last;
        }
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) {
          throw e;
        }
      }
      TestCluster.pause(Duration.ofMillis(50));
    }
    return last;
  }

  /** The services server reflection (v1) lists. */
  private static Set<String> reflectedServices(ManagedChannel channel) throws Exception {
    CompletableFuture<ServerReflectionResponse> answer = new CompletableFuture<>();
    StreamObserver<ServerReflectionRequest> requests = ServerReflectionGrpc.newStub(channel)
        .withDeadlineAfter(5, TimeUnit.SECONDS)
        .serverReflectionInfo(new StreamObserver<>() {
          @Override
          public void onNext(ServerReflectionResponse value) {
            answer.complete(value);
          }

          @Override
          public void onError(Throwable t) {
            answer.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {
            answer.completeExceptionally(new IllegalStateException("no reflection answer"));
          }
        });
    requests.onNext(ServerReflectionRequest.newBuilder().setListServices("").build());
    ServerReflectionResponse response;
    try {
      response = answer.get(10, TimeUnit.SECONDS);
    } finally {
      requests.onCompleted();
    }
    return response.getListServicesResponse().getServiceList().stream()
        .map(ServiceResponse::getName).collect(Collectors.toSet());
  }
}
