package dev.warden.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ValidityTest {

  // Defends S5 (a holder stops trusting its grant before the server can expire it): validity is
  // TTL x (1 - 2 rho) - 50 ms with rho = 1 %, the Rust client's formula.
  @Test
  void validityIsTtlLessTwiceTheDriftLessTheMargin() {
    assertEquals(Duration.ofMillis(4_850), Validity.ofTtlMs(5_000));
    assertEquals(Duration.ofMillis(930), Validity.ofTtlMs(1_000));
    assertEquals(Duration.ofMillis(9_750), Validity.ofTtlMs(10_000));
    // 3 s: 2940 - 50.
    assertEquals(Duration.ofMillis(2_890), Validity.ofTtlMs(3_000));
  }

  // Defends S5 at the edges: a TTL shorter than the margin gives no validity at all (never a
  // negative one), and a non-integral drift result keeps its sub-millisecond part.
  @Test
  void validitySaturatesAtZeroAndKeepsNanoseconds() {
    assertEquals(Duration.ZERO, Validity.ofTtlMs(0));
    assertEquals(Duration.ZERO, Validity.ofTtlMs(-5));
    assertEquals(Duration.ZERO, Validity.ofTtlMs(50));
    // 1001 ms x 0.98 = 980.98 ms; less 50 ms.
    assertEquals(Duration.ofNanos(930_980_000), Validity.ofTtlMs(1_001));
  }
}
