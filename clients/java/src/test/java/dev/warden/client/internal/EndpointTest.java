package dev.warden.client.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class EndpointTest {

  // Defends "What bad input gets": an endpoint is host:port (an http(s):// prefix and a
  // trailing slash are dropped, as the CLI takes them); IPv6 keeps its brackets.
  @Test
  void parsesHostPort() throws Exception {
    assertEquals(new Endpoint("127.0.0.1", 7001), Endpoint.parse("127.0.0.1:7001"));
    assertEquals(new Endpoint("localhost", 7001), Endpoint.parse(" http://localhost:7001/ "));
    assertEquals(new Endpoint("node-1", 443), Endpoint.parse("https://node-1:443"));
    Endpoint v6 = Endpoint.parse("[::1]:7001");
    assertEquals("[::1]", v6.host());
    assertEquals("::1", v6.socketHost());
    assertEquals("[::1]:7001", v6.toString());
  }

  // Defends "What bad input gets": each bad endpoint is refused with a message naming what is
  // wrong, and a bad leader hint is never followed (tryParse is empty).
  @Test
  void refusesWhatIsNotHostPort() {
    for (String bad : new String[] {"", "   ", "localhost", ":7001", "host:0", "host:65536",
        "host:port", "::1:7001", "unix:///tmp/s", "a/b:1", "user@host:1"}) {
      assertThrows(Endpoint.InvalidEndpoint.class, () -> Endpoint.parse(bad), bad);
      assertEquals(Optional.empty(), Endpoint.tryParse(bad), bad);
    }
    Endpoint.InvalidEndpoint e =
        assertThrows(Endpoint.InvalidEndpoint.class, () -> Endpoint.parse("h:70000"));
    assertTrue(e.getMessage().contains("1..=65535"), e.getMessage());
  }
}
