package dev.warden.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsOptionsTest {

  // Defends "What bad input gets" for TLS options: a certs dir is read as the CLI reads it
  // (ca.crt, client.USER.crt, client.USER.key), and a missing file is a typed error naming it.
  @Test
  void aMissingFileIsNamed(@TempDir Path dir) {
    TlsOptions tls = TlsOptions.fromCertsDir(dir, "alice");
    assertEquals(dir.resolve("ca.crt"), tls.caCert());
    assertEquals(dir.resolve("client.alice.crt"), tls.clientCert().orElseThrow());
    assertEquals(dir.resolve("client.alice.key"), tls.clientKey().orElseThrow());
    TlsConfigException e = assertThrows(TlsConfigException.class, tls::credentials);
    assertEquals(dir.resolve("ca.crt"), e.file());
    assertTrue(e.getMessage().contains("not found"), e.getMessage());
  }

  // Defends "What bad input gets" for TLS options: a file that is not PEM is refused with a
  // typed error naming that file, before any connection is made.
  @Test
  void aFileThatIsNotPemIsNamed(@TempDir Path dir) throws Exception {
    Path ca = Files.writeString(dir.resolve("ca.crt"), "not a certificate\n");
    TlsConfigException e = assertThrows(TlsConfigException.class,
        () -> TlsOptions.serverOnly(ca).credentials());
    assertEquals(ca, e.file());
  }
}
