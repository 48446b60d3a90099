"""Unit tests of the pure parts: endpoints and the call plan (L3), request ids
and the in-flight window (S7), validity (S5), and the status mapping."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc import aio

from warden_client import (
    BOOT_CLOCK,
    CompactedError,
    InvalidArgumentError,
    LeaseNotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    TransportError,
    UnimplementedError,
    validity_s,
)
from warden_client.errors import error_from_status, is_retryable, server_answered, status_of
from warden_client.requests import RequestIds
from warden_client.routing import CallPlan, backoff_s, leader_hint, parse_endpoint, parse_endpoints

EPS = ["a:1", "b:2", "c:3"]


# --- endpoints and the call plan (L3) ----------------------------------------


def test_endpoints_are_parsed_or_refused_with_a_reason() -> None:
    """What bad input gets: a malformed endpoint is an InvalidArgumentError
    naming what is wrong (field ``endpoints``), never a crash."""
    assert parse_endpoint("127.0.0.1:7001") == "127.0.0.1:7001"
    assert parse_endpoint(" http://node1:7001/ ") == "node1:7001"
    assert parse_endpoint("[::1]:7001") == "[::1]:7001"
    for raw, why in [
        ("", "empty"),
        ("node1", "port"),
        (":7001", "host"),
        ("node1:0", "1..=65535"),
        ("node1:99999", "1..=65535"),
        ("https://node1:7001", "plain"),
        ("::1:7001", "brackets"),
    ]:
        with pytest.raises(InvalidArgumentError) as bad:
            parse_endpoint(raw)
        assert why in str(bad.value) and bad.value.field == "endpoints"
    assert parse_endpoints("a:1, b:2,a:1") == ("a:1", "b:2")
    with pytest.raises(InvalidArgumentError):
        parse_endpoints([])


def test_leader_hint_is_read_from_metadata_and_a_bad_one_ignored() -> None:
    """L3: a valid warden-leader entry is followed; a malformed one is not."""
    assert leader_hint({}) is None
    assert leader_hint({"warden-leader": "10.0.0.2:7001"}) == "10.0.0.2:7001"
    assert leader_hint({"warden-leader": "garbage"}) is None
    assert leader_hint({"warden-leader": ""}) is None


def test_plan_starts_at_the_cached_leader_and_follows_hints_at_once() -> None:
    """L3: the cached leader is tried first; a hint is followed with no pause;
    a hint naming the node that just failed is not."""
    plan = CallPlan(EPS, "b:2", 0.2)
    assert plan.first == "b:2"
    assert plan.after_failure("b:2", "c:3", True) == (0.0, "c:3")
    _, nxt = plan.after_failure("c:3", "c:3", True)
    assert nxt != "c:3"


def test_plan_rotates_then_backs_off_doubling_with_a_cap() -> None:
    """L3: next endpoint at once; after each whole round a pause of 25 ms
    doubling, capped at 200 ms."""
    plan = CallPlan(EPS, None, 0.2)
    target = plan.first
    targets, pauses = [target], []
    for _ in range(12):
        pause, target = plan.after_failure(target, None, False)
        pauses.append(round(pause * 1000))
        targets.append(target)
    assert targets[:4] == ["a:1", "b:2", "c:3", "a:1"]
    assert pauses == [0, 0, 25, 0, 0, 50, 0, 0, 100, 0, 0, 200]
    assert plan.tried == ("a:1", "b:2", "c:3")
    assert backoff_s(10_000, 0.2) == 0.2


def test_a_hint_to_a_silent_node_is_not_followed() -> None:
    """L4 with a frozen ex-leader: followers still naming a node that failed
    this call without answering are not followed back to it."""
    plan = CallPlan(EPS, "a:1", 0.2)
    assert plan.after_failure("a:1", None, False)[1] == "b:2"
    assert plan.after_failure("b:2", "a:1", True)[1] == "c:3"
    assert plan.after_failure("c:3", "b:2", True)[1] == "b:2"


def test_hint_ping_pong_falls_back_to_rotation() -> None:
    """L3: two nodes naming each other cannot bounce a call forever."""
    plan = CallPlan(EPS, None, 0.2)
    target = plan.first
    for _ in range(20):
        _, target = plan.after_failure(target, "b:2" if target == "a:1" else "a:1", True)
        if target == "c:3":
            return
    pytest.fail("the plan never rotated to c:3")


# --- request ids (S7) ---------------------------------------------------------


async def test_request_ids_start_at_one_and_the_watermark_waits_for_the_oldest() -> None:
    """S7: ids grow by one from 1; the watermark never passes a request still
    in flight, even when later ones finished; finishing twice is harmless."""
    ids = RequestIds(64)
    r1, r2, r3 = (await ids.begin(), await ids.begin(), await ids.begin())
    assert [r.request_id for r in (r1, r2, r3)] == [1, 2, 3]
    assert [r.acked_request_id for r in (r1, r2, r3)] == [0, 0, 0]
    r2.finish()
    r3.finish()
    assert ids.acked == 0
    r4 = await ids.begin()
    assert r4.acked_request_id == 0
    r1.finish()
    r1.finish()
    assert ids.acked == 3
    r4.finish()
    assert ids.acked == 4


async def test_no_request_goes_more_than_the_window_past_the_watermark() -> None:
    """S7 (the server keeps max_requests_in_flight outcomes per client): with
    the oldest request still out, request window+1 waits until it returns,
    then goes with the watermark moved; a window that stays full ends in
    ResourceExhaustedError at the deadline."""
    ids = RequestIds(4)
    oldest = await ids.begin()
    later = [await ids.begin() for _ in range(3)]
    for r in later:
        r.finish()
    with pytest.raises(ResourceExhaustedError):
        await ids.begin(timeout_s=0.05)
    waiting = asyncio.ensure_future(ids.begin(timeout_s=5.0))
    await asyncio.sleep(0)
    assert not waiting.done()
    oldest.finish()
    nxt = await asyncio.wait_for(waiting, 5.0)
    assert (nxt.request_id, nxt.acked_request_id) == (5, 4)
    ids.set_window(1)
    assert ids.window == 1 and not ids.has_room()


# --- validity and the clock (S5) ---------------------------------------------


def test_validity_takes_drift_and_margin_off_the_ttl() -> None:
    """S5: validity = TTL x (1 - 2 rho) - 50 ms with rho = 1 %."""
    assert validity_s(10_000) == 9.75
    assert validity_s(1_000) == 0.93
    assert validity_s(40) == 0.0
    assert validity_s(3_600_000) == 3527.95


def test_the_session_clock_counts_suspended_time() -> None:
    """ "Time" (docs/semantics.md): on Linux the session clock is
    CLOCK_BOOTTIME, which counts time spent suspended."""
    assert BOOT_CLOCK.name == "CLOCK_BOOTTIME" and BOOT_CLOCK.counts_suspend
    assert abs(BOOT_CLOCK.now() - time.clock_gettime(time.CLOCK_BOOTTIME)) < 1.0


# --- the status mapping -------------------------------------------------------


def _rpc_error(
    code: grpc.StatusCode,
    message: str,
    reason: str | None = None,
    field: str | None = None,
    metadata: tuple[tuple[str, str], ...] = (),
    domain: str = "warden.v1",
) -> aio.AioRpcError:
    trailing: list[tuple[str, str | bytes]] = list(metadata)
    if reason is not None:
        status = status_pb2.Status(code=code.value[0], message=message)
        info = any_pb2.Any()
        info.Pack(error_details_pb2.ErrorInfo(reason=reason, domain=domain))
        status.details.append(info)
        if field is not None:
            bad = any_pb2.Any()
            bad.Pack(
                error_details_pb2.BadRequest(
                    field_violations=[error_details_pb2.BadRequest.FieldViolation(field=field, description=message)]
                )
            )
            status.details.append(bad)
        trailing.append(("grpc-status-details-bin", status.SerializeToString()))
    return aio.AioRpcError(code, aio.Metadata(), aio.Metadata(*trailing), message)


def test_the_exception_class_comes_from_the_error_info_reason() -> None:
    """ "What bad input gets": the class comes from ErrorInfo (domain
    warden.v1), the field from BadRequest; the server's message is kept."""
    bad = error_from_status(
        status_of(_rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "ttl_ms: 500 < 1000", "INVALID_ARGUMENT", "ttl_ms"))
    )
    assert isinstance(bad, InvalidArgumentError) and bad.field == "ttl_ms" and bad.message == "ttl_ms: 500 < 1000"
    gone = error_from_status(status_of(_rpc_error(grpc.StatusCode.NOT_FOUND, "lease 7", "LEASE_NOT_LIVE", "lease_id")))
    assert isinstance(gone, LeaseNotFoundError)
    denied = error_from_status(status_of(_rpc_error(grpc.StatusCode.PERMISSION_DENIED, "no", "PERMISSION_DENIED")))
    assert isinstance(denied, PermissionDeniedError)
    compacted = error_from_status(
        status_of(
            _rpc_error(
                grpc.StatusCode.OUT_OF_RANGE, "compacted", "COMPACTED", metadata=(("warden-oldest-index", "34"),)
            )
        )
    )
    assert isinstance(compacted, CompactedError) and compacted.oldest_index == 34
    # Another domain's ErrorInfo is not Warden's reason.
    foreign = status_of(_rpc_error(grpc.StatusCode.NOT_FOUND, "x", "LEASE_NOT_LIVE", domain="example.com"))
    assert foreign.reason is None
    assert not isinstance(error_from_status(foreign), LeaseNotFoundError)
    assert isinstance(error_from_status(status_of(_rpc_error(grpc.StatusCode.UNIMPLEMENTED, ""))), UnimplementedError)
    assert isinstance(error_from_status(status_of(_rpc_error(grpc.StatusCode.DATA_LOSS, "?"))), TransportError)


def test_retries_follow_the_code_and_who_chose_the_status() -> None:
    """L3: not-leader, no-quorum, timeouts and broken transports are retried;
    a refusal is final; an INTERNAL with Warden's details is the server's
    answer (final), without them a broken stream (retried)."""
    redirect = status_of(
        _rpc_error(grpc.StatusCode.UNAVAILABLE, "not the leader", "NOT_LEADER", metadata=(("warden-leader", "b:2"),))
    )
    assert is_retryable(redirect) and server_answered(redirect)
    assert leader_hint(redirect.metadata) == "b:2"
    transport = status_of(_rpc_error(grpc.StatusCode.UNAVAILABLE, "failed to connect to all addresses"))
    assert is_retryable(transport) and not server_answered(transport)
    assert is_retryable(status_of(_rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "")))
    assert is_retryable(status_of(_rpc_error(grpc.StatusCode.INTERNAL, "stream reset")))
    assert not is_retryable(status_of(_rpc_error(grpc.StatusCode.INTERNAL, "bug", "INTERNAL")))
    assert not is_retryable(status_of(_rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "x", "INVALID_ARGUMENT")))
    assert not is_retryable(status_of(_rpc_error(grpc.StatusCode.FAILED_PRECONDITION, "held")))
