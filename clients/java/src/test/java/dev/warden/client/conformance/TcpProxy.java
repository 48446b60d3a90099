package dev.warden.client.conformance;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small loopback TCP proxy in front of one node (clients/conformance/README.md): accepts on
 * 127.0.0.1:0 and forwards each connection to the target.
 *
 * <ul>
 *   <li>{@link #cut()}: stop forwarding in both directions, close every client-side socket, and
 *       close each new connection at once (the client is cut off);
 *   <li>"swallow replies" (constructed with {@code swallowFirstConnection}): on the first
 *       connection, forward client→node as is but drop every HTTP/2 frame node→client except
 *       the connection's own (stream 0: SETTINGS, PING, WINDOW_UPDATE, GOAWAY), so the
 *       connection stays up and each request on it reaches the node while its reply is lost;
 *       {@link #heal()} closes that connection and forwards later ones normally.
 * </ul>
 */
public final class TcpProxy implements AutoCloseable {
  private final String targetHost;
  private final int targetPort;
  private final ServerSocket listener;
  private final Thread acceptor;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final AtomicInteger accepted = new AtomicInteger();
  private final AtomicInteger swallowedFrames = new AtomicInteger();
  private volatile boolean cut;
  private volatile boolean swallowing;
  private volatile Socket swallowed;
  private volatile boolean closed;

  /** A proxy to {@code target} (host:port); {@code swallowFirstConnection}: see the class. */
  public TcpProxy(String target, boolean swallowFirstConnection) throws IOException {
    int colon = target.lastIndexOf(':');
    this.targetHost = target.substring(0, colon);
    this.targetPort = Integer.parseInt(target.substring(colon + 1));
    this.swallowing = swallowFirstConnection;
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

  /** Node→client frames dropped by "swallow replies" so far. */
  public int swallowedFrames() {
    return swallowedFrames.get();
  }

  /** Cuts every connection and refuses new ones. */
  public void cut() {
    cut = true;
    closeAll();
  }

  /** Ends "swallow replies": closes the swallowing connection; new ones are forwarded. */
  public void heal() {
    swallowing = false;
    Socket s = swallowed;
    if (s != null) {
      closeQuietly(s);
    }
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
      boolean swallow = swallowing && swallowed == null;
      if (swallow) {
        swallowed = client;
      }
      pump(client, server, false);
      pump(server, client, swallow);
    }
  }

  private void pump(Socket from, Socket to, boolean swallowStreams) {
    Thread t = new Thread(() -> {
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        if (swallowStreams) {
          forwardConnectionFrames(new DataInputStream(in), out);
        } else {
          byte[] buf = new byte[16 * 1024];
          int n;
          while (!cut && (n = in.read(buf)) >= 0) {
            out.write(buf, 0, n);
            out.flush();
          }
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

  /** Forwards only HTTP/2 frames of stream 0 (server→client: the server sends no preface). */
  private void forwardConnectionFrames(DataInputStream in, OutputStream out) throws IOException {
    byte[] header = new byte[9];
    while (!cut) {
      try {
        in.readFully(header);
      } catch (EOFException e) {
        return;
      }
      int length = ((header[0] & 0xff) << 16) | ((header[1] & 0xff) << 8) | (header[2] & 0xff);
      int stream = ((header[5] & 0x7f) << 24) | ((header[6] & 0xff) << 16)
          | ((header[7] & 0xff) << 8) | (header[8] & 0xff);
      byte[] payload = new byte[length];
      in.readFully(payload);
      if (stream == 0) {
        out.write(header);
        out.write(payload);
        out.flush();
      } else {
        swallowedFrames.incrementAndGet();
      }
    }
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
