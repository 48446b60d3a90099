"""Where the next attempt goes: endpoint parsing, the ``warden-leader`` hint,
and the per-call plan of targets and backoff (pure logic: no IO, no clock).

Rules (docs/semantics.md L3): start at the cached leader (or the first
endpoint); on a failure that names a leader go there at once (at most as many
hops in a row as there are endpoints, so two confused nodes cannot bounce a
call forever); otherwise move to the next endpoint at once, and after a whole
round of endpoints failed pause, 25 ms doubling, capped (200 ms by default).
A hint naming a node that failed this call without answering is not followed
(a frozen ex-leader would cost an attempt timeout per hint).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .errors import LEADER_METADATA, InvalidArgumentError

#: First pause after a whole round of endpoints failed, in seconds.
BACKOFF_BASE_S = 0.025


def parse_endpoint(raw: str) -> str:
    """``host:port`` (an ``http://`` prefix is accepted and dropped) in the
    canonical form used as the channel cache key.

    Raises InvalidArgumentError (field ``endpoints``) naming what is wrong."""

    def bad(why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"endpoints: {raw!r}: {why}", field="endpoints")

    text = raw.strip()
    if text.startswith("http://"):
        text = text[len("http://") :]
    elif "://" in text:
        raise bad("only plain host:port (or http://host:port) is supported")
    text = text.rstrip("/")
    if not text:
        raise bad("empty address; expected host:port")
    host, sep, port = text.rpartition(":")
    if not sep:
        raise bad("missing port; expected host:port")
    if not host or host == "[]":
        raise bad("missing host; expected host:port")
    if any(c in host for c in "/?#@ "):
        raise bad("host contains a character that is not allowed in host:port")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise bad("an IPv6 host must be in brackets, e.g. [::1]:7001")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise bad(f"port {port!r} is not a number in 1..=65535")
    return text


def parse_endpoints(endpoints: str | Sequence[str]) -> tuple[str, ...]:
    """A comma-separated string or a list of ``host:port``, canonical and
    without duplicates (order kept). At least one is required."""
    items = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
    out: list[str] = []
    for item in items:
        endpoint = parse_endpoint(item)
        if endpoint not in out:
            out.append(endpoint)
    if not out:
        raise InvalidArgumentError("endpoints: at least one host:port is required", field="endpoints")
    return tuple(out)


def leader_hint(metadata: Mapping[str, str]) -> str | None:
    """The leader's address from a ``warden-leader`` entry; ``None`` when it is
    absent, empty or not a valid ``host:port`` (a bad hint is ignored)."""
    value = metadata.get(LEADER_METADATA)
    if not value:
        return None
    try:
        return parse_endpoint(value)
    except InvalidArgumentError:
        return None


def backoff_s(round_: int, cap_s: float) -> float:
    """The pause after ``round_`` completed rounds: 25 ms doubling, at most
    ``cap_s``."""
    return min(BACKOFF_BASE_S * (1 << min(round_, 16)), cap_s)


class CallPlan:
    """The targets and pauses of one call, from first attempt to deadline."""

    def __init__(self, endpoints: Sequence[str], cached_leader: str | None, backoff_cap_s: float) -> None:
        if not endpoints:
            raise InvalidArgumentError("endpoints: at least one host:port is required", field="endpoints")
        self._endpoints = list(endpoints)
        self._cap = backoff_cap_s
        self._failures_in_round = 0
        self._rounds = 0
        self._hops_in_a_row = 0
        self._tried: list[str] = []
        self._silent: list[str] = []
        if cached_leader is not None:
            self.first = cached_leader
            self._cursor = (
                (self._endpoints.index(cached_leader) + 1) % len(self._endpoints)
                if cached_leader in self._endpoints
                else 0
            )
        else:
            self.first = self._endpoints[0]
            self._cursor = 1 % len(self._endpoints)
        self._note(self.first)

    def _note(self, target: str) -> None:
        if target not in self._tried:
            self._tried.append(target)

    @property
    def tried(self) -> tuple[str, ...]:
        """Distinct addresses tried so far, in order of first attempt."""
        return tuple(self._tried)

    def after_failure(self, failed: str, hint: str | None, answered: bool) -> tuple[float, str]:
        """After ``failed`` failed (``hint``: the leader it named;
        ``answered``: the node itself replied): the pause in seconds and the
        next target."""
        self._failures_in_round += 1
        if answered:
            self._silent = [s for s in self._silent if s != failed]
        elif failed not in self._silent:
            self._silent.append(failed)
        followable = hint is not None and hint != failed and hint not in self._silent
        if followable and hint is not None and self._hops_in_a_row < len(self._endpoints):
            self._hops_in_a_row += 1
            self._note(hint)
            return 0.0, hint
        self._hops_in_a_row = 0
        n = len(self._endpoints)
        nxt = self._endpoints[self._cursor]
        self._cursor = (self._cursor + 1) % n
        if nxt == failed and n > 1:
            nxt = self._endpoints[self._cursor]
            self._cursor = (self._cursor + 1) % n
        pause = 0.0
        if self._failures_in_round >= n:
            self._failures_in_round = 0
            pause = backoff_s(self._rounds, self._cap)
            self._rounds += 1
        self._note(nxt)
        return pause, nxt
