package dev.warden.client.conformance;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small loopback TCP proxy in front of one node (clients/conformance/README.md): accepts on
 * 127.0.0.1:0 and forwards each connection to the target, byte for byte (it works the same on a
 * TLS connection: it never looks inside).
 *
 * <ul>
 *   <li>{@link #cut()}: stop forwarding in both directions, close every client-side socket, and
 *       close each new connection at once (the client is cut off);
 *   <li>{@link #swallowReplies()}: keep forwarding client→node but drop every node→client byte,
 *       on every connection, so each request reaches the node while its reply is lost (the
 *       connection stays open: the client sees silence, as after a lost packet);
 *       {@link #heal()} closes every connection that lost bytes (its TLS and HTTP/2 streams are
 *       broken) and forwards normally again.
 * </ul>
 */
public final class TcpProxy implements AutoCloseable {
  private final String targetHost;
  private final int targetPort;
  private final ServerSocket listener;
  private final Thread acceptor;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Set<Socket> tainted = ConcurrentHashMap.newKeySet();
  private final AtomicInteger accepted = new AtomicInteger();
  private final AtomicInteger swallowedReads = new AtomicInteger();
  private volatile boolean cut;
  private volatile boolean swallowing;
  private volatile boolean closed;

  /** A proxy to {@code target} (host:port), forwarding. */
  public TcpProxy(String target) throws IOException {
    int colon = target.lastIndexOf(':');
    this.targetHost = target.substring(0, colon);
    this.targetPort = Integer.parseInt(target.substring(colon + 1));
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    this.acceptor = new Thread(this::acceptLoop, "tcp-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The address clients connect to. */
  public String address() {
    return "127.0.0.1:" + listener.getLocalPort();
  }

  /** Connections accepted so far. */
  public int accepted() {
    return accepted.get();
  }

  /** Node→client reads dropped by {@link #swallowReplies()} so far. */
  public int swallowedReads() {
    return swallowedReads.get();
  }

  /** Cuts every connection and refuses new ones. */
  public void cut() {
    cut = true;
    closeAll();
  }

  /** From now on drops every node→client byte (until {@link #heal()}). */
  public void swallowReplies() {
    swallowing = true;
  }

  /** Ends {@link #swallowReplies()}: closes each connection that lost bytes; forwards again. */
  public void heal() {
    swallowing = false;
    for (Socket s : tainted) {
      closeQuietly(s);
    }
    tainted.clear();
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return;
      }
      accepted.incrementAndGet();
      if (cut) {
        closeQuietly(client);
        continue;
      }
      Socket server = new Socket();
      try {
        server.connect(new InetSocketAddress(targetHost, targetPort), 2_000);
        client.setTcpNoDelay(true);
        server.setTcpNoDelay(true);
      } catch (IOException e) {
        closeQuietly(client);
        closeQuietly(server);
        continue;
      }
      sockets.add(client);
      sockets.add(server);
      pump(client, server, null);
      pump(server, client, client);
    }
  }

  /** Copies {@code from} to {@code to}; {@code replyTo} is set for the node→client direction. */
  private void pump(Socket from, Socket to, Socket replyTo) {
    Thread t = new Thread(() -> {
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        byte[] buf = new byte[16 * 1024];
        int n;
        while (!cut && (n = in.read(buf)) >= 0) {
          if (replyTo != null && swallowing) {
            tainted.add(replyTo);
            swallowedReads.incrementAndGet();
            continue;
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // the connection ended
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private void closeAll() {
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    sockets.clear();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() {
    closed = true;
    cut = true;
    try {
      listener.close();
    } catch (IOException e) {
      // already closed
    }
    closeAll();
  }
}
