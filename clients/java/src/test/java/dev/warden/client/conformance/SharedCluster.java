package dev.warden.client.conformance;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Hands every test that asks for a {@link TestCluster} parameter the one cluster of this test
 * run (scenarios use their own resource names, so they may share it), started on first use and
 * stopped when the run ends. Its nodes take snapshots often ({@code --snapshot-threshold 20}) so
 * that a restarted node has events it did not apply since it started (C09's compaction check).
 */
public final class SharedCluster implements ParameterResolver {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(SharedCluster.class);

  private static final class Holder implements AutoCloseable {
    final TestCluster cluster = TestCluster.start(3, "--snapshot-threshold", "20");

    @Override
    public void close() {
      cluster.close();
    }
  }

  @Override
  public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
    return p.getParameter().getType() == TestCluster.class;
  }

  @Override
  public Object resolveParameter(ParameterContext p, ExtensionContext e) {
    return e.getRoot().getStore(NS)
        .getOrComputeIfAbsent("cluster", k -> new Holder(), Holder.class).cluster;
  }
}
