/**
 * The suite that runs against one real three-node mutual-TLS cluster
 * started from WARDEN_BIN (test/harness.ts): conformance C01-C17
 * (clients/conformance/scenarios.md, each test marked `conformance:
 * CNN-name`), then the README's example, the fencing headers against
 * `warden fenced-store`, and the redlock-shaped module. One process, one
 * cluster; the scenarios that kill a node start it again.
 */
import { after } from "node:test";

import { stopShared } from "./harness.js";
import "./conformance/locks.js";
import "./conformance/failures.js";
import "./conformance/elections_watch.js";
import "./conformance/input_cancel.js";
import "./conformance/security.js";
import "./conformance/kinds.js";

after(stopShared);
import "./examples.js";
