package warden

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// "What bad input gets": malformed endpoints are refused with a reason
// naming what is wrong, never a panic.
func TestParseEndpointRefusesWithAReason(t *testing.T) {
	good := map[string]string{
		"127.0.0.1:7001":       "127.0.0.1:7001",
		" http://node1:7001/ ": "node1:7001",
		"[::1]:7001":           "[::1]:7001",
	}
	for in, want := range good {
		if got, err := ParseEndpoint(in); err != nil || got != want {
			t.Errorf("ParseEndpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                   "empty",
		"node1":              "port",
		":7001":              "host",
		"node1:0":            "1..=65535",
		"node1:99999":        "1..=65535",
		"https://node1:7001": "only host:port",
		"::1:7001":           "brackets",
	}
	for in, want := range bad {
		_, err := ParseEndpoint(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEndpoint(%q) = %v; want an error mentioning %q", in, err, want)
		}
	}
	if _, err := New(nil, Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("New with no endpoints: %v", err)
	}
	if _, err := New([]string{"nohost"}, Options{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("New with a bad endpoint: %v", err)
	}
}

// L3 leader following: a valid `warden-leader` entry is followed, a bad one
// is ignored.
func TestLeaderHintIsReadFromMetadata(t *testing.T) {
	if h := leaderHint(metadata.MD{}); h != "" {
		t.Fatalf("hint from nothing: %q", h)
	}
	if h := leaderHint(metadata.Pairs(leaderMetadata, "10.0.0.2:7001")); h != "10.0.0.2:7001" {
		t.Fatalf("hint %q", h)
	}
	for _, bad := range []string{"garbage", "", "h:0"} {
		if h := leaderHint(metadata.Pairs(leaderMetadata, bad)); h != "" {
			t.Fatalf("bad hint %q followed as %q", bad, h)
		}
	}
}

var eps = []string{"a:1", "b:2", "c:3"}

// L3: the cached leader is tried first and a hint is followed at once.
func TestPlanStartsAtCachedLeaderAndFollowsHints(t *testing.T) {
	p, first := newCallPlan(eps, "b:2", 200*time.Millisecond)
	if first != "b:2" {
		t.Fatalf("first %q", first)
	}
	if pause, next := p.afterFailure("b:2", "c:3", true); pause != 0 || next != "c:3" {
		t.Fatalf("after a hint: %v %q", pause, next)
	}
	if _, next := p.afterFailure("c:3", "c:3", true); next == "c:3" {
		t.Fatal("a hint naming the node that just failed was followed")
	}
}

// L3/L4 retry path: next endpoint at once; after each whole round a pause
// of 25 ms doubling, capped at 200 ms.
func TestPlanRotatesThenBacksOffWithACap(t *testing.T) {
	p, target := newCallPlan(eps, "", 200*time.Millisecond)
	var pauses []time.Duration
	targets := []string{target}
	for i := 0; i < 12; i++ {
		pause, next := p.afterFailure(target, "", false)
		pauses = append(pauses, pause)
		targets = append(targets, next)
		target = next
	}
	ms := time.Millisecond
	want := []time.Duration{0, 0, 25 * ms, 0, 0, 50 * ms, 0, 0, 100 * ms, 0, 0, 200 * ms}
	for i := range want {
		if pauses[i] != want[i] {
			t.Fatalf("pauses %v, want %v", pauses, want)
		}
	}
	if strings.Join(targets[:4], ",") != "a:1,b:2,c:3,a:1" {
		t.Fatalf("targets %v", targets)
	}
	if strings.Join(p.tried, ",") != "a:1,b:2,c:3" {
		t.Fatalf("tried %v", p.tried)
	}
	if backoff(1<<20, 200*ms) != 200*ms || backoff(0, 200*ms) != 25*ms {
		t.Fatal("backoff not capped")
	}
}

// L4 with a frozen leader: a hint naming a node that failed this call
// without answering is not followed (each visit would cost an attempt
// timeout); it is followed again once that node answers.
func TestPlanDoesNotFollowAHintToASilentNode(t *testing.T) {
	p, _ := newCallPlan(eps, "a:1", 200*time.Millisecond)
	if _, next := p.afterFailure("a:1", "", false); next != "b:2" {
		t.Fatalf("next %q", next)
	}
	if _, next := p.afterFailure("b:2", "a:1", true); next != "c:3" {
		t.Fatalf("followed the hint to silent a:1 (next %q)", next)
	}
	if _, next := p.afterFailure("c:3", "b:2", true); next != "b:2" {
		t.Fatalf("did not follow the hint to b:2 (next %q)", next)
	}
	_, next := p.afterFailure("a:1", "", true)
	if _, n2 := p.afterFailure(next, "a:1", true); n2 != "a:1" {
		t.Fatalf("a:1 answered again but its hint is not followed (%q)", n2)
	}
}

// L3: two nodes naming each other cannot bounce a call forever.
func TestPlanHintPingPongFallsBackToRotation(t *testing.T) {
	p, target := newCallPlan(eps, "", 200*time.Millisecond)
	for i := 0; i < 20; i++ {
		hint := "a:1"
		if target == "a:1" {
			hint = "b:2"
		}
		_, next := p.afterFailure(target, hint, true)
		if next == "c:3" {
			return
		}
		target = next
	}
	t.Fatal("never rotated to c:3")
}

// S7: ids start at 1 and grow by one; the watermark never passes a request
// still in flight.
func TestRequestIDsAndWatermark(t *testing.T) {
	ctx := context.Background()
	r := newRequestIDs(64)
	r1, _ := r.begin(ctx)
	r2, _ := r.begin(ctx)
	r3, _ := r.begin(ctx)
	if r1.requestID != 1 || r2.requestID != 2 || r3.requestID != 3 || r2.ackedRequestID != 0 || r3.ackedRequestID != 0 {
		t.Fatalf("ids %d %d %d acked %d %d", r1.requestID, r2.requestID, r3.requestID, r2.ackedRequestID, r3.ackedRequestID)
	}
	r2.finish()
	r3.finish()
	if a := r.acked(); a != 0 {
		t.Fatalf("watermark %d while request 1 is in flight", a)
	}
	r4, _ := r.begin(ctx)
	if r4.ackedRequestID != 0 {
		t.Fatalf("request 4 carries watermark %d", r4.ackedRequestID)
	}
	r1.finish()
	if a := r.acked(); a != 3 {
		t.Fatalf("watermark %d, want 3 (4 in flight)", a)
	}
	r4.finish()
	r4.finish() // a second finish changes nothing
	if a := r.acked(); a != 4 {
		t.Fatalf("watermark %d, want 4", a)
	}
}

// S7 under concurrency (a benchmark's "the outcome of request N is no
// longer kept"): with the oldest request out, no id goes more than the
// window past the watermark; the next one goes once the oldest returns.
func TestNoRequestGoesMoreThanTheWindowPastTheWatermark(t *testing.T) {
	r := newRequestIDs(DefaultMaxRequestsInFlight)
	ctx := context.Background()
	oldest, _ := r.begin(ctx)
	for i := 1; i < DefaultMaxRequestsInFlight; i++ {
		q, _ := r.begin(ctx)
		q.finish()
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if q, err := r.begin(short); err == nil {
		t.Fatalf("request %d went %d past the watermark", q.requestID, q.requestID-r.acked())
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for room: %v", err)
	}
	got := make(chan *inFlightRequest, 1)
	go func() {
		q, _ := r.begin(ctx)
		got <- q
	}()
	oldest.finish()
	select {
	case q := <-got:
		if q.requestID != DefaultMaxRequestsInFlight+1 || q.ackedRequestID != DefaultMaxRequestsInFlight {
			t.Fatalf("next request %d with watermark %d", q.requestID, q.ackedRequestID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request never went")
	}
}

// S5: validity = TTL × (1 − 2ρ) − 50 ms, ρ = 1 %, never negative.
func TestValidityTakesDriftAndMarginOffTheTTL(t *testing.T) {
	cases := map[time.Duration]time.Duration{
		10 * time.Second:      9750 * time.Millisecond,
		time.Second:           930 * time.Millisecond,
		40 * time.Millisecond: 0,
		time.Hour:             3_527_950 * time.Millisecond,
		0:                     0,
	}
	for ttl, want := range cases {
		if got := Validity(ttl); got != want {
			t.Errorf("Validity(%v) = %v, want %v", ttl, got, want)
		}
	}
}

// S5 ("Time"): the boot clock reads and never goes backwards.
func TestBootClockIsMonotonic(t *testing.T) {
	var c BootClock
	a, err := c.Now()
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Now()
	if err != nil || b < a || a <= 0 {
		t.Fatalf("readings %v then %v (%v)", a, b, err)
	}
}

func detailed(t *testing.T, code codes.Code, msg, reason, field string) *rpcError {
	t.Helper()
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}}
	if field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}}})
	}
	st2, err := status.New(code, msg).WithDetails(details...)
	if err != nil {
		t.Fatal(err)
	}
	return &rpcError{st: st2}
}

// "What bad input gets": the kind and the field come from the structured
// details, never from the message: a message that names another field
// changes nothing.
func TestErrorsAreReadFromDetailsNotText(t *testing.T) {
	e := judge(detailed(t, codes.InvalidArgument, "ttl_ms: this text names the wrong field", "INVALID_ARGUMENT", "resource")).typed()
	if e.Kind != KindInvalidArgument || e.Field != "resource" || e.Reason != "INVALID_ARGUMENT" {
		t.Fatalf("typed %+v", e)
	}
	if !errors.Is(e, ErrInvalidArgument) || errors.Is(e, ErrNotFound) {
		t.Fatal("errors.Is does not match the kind")
	}
	// REQUEST_EXPIRED travels as FailedPrecondition; the reason decides.
	if k := judge(detailed(t, codes.FailedPrecondition, "anything", "REQUEST_EXPIRED", "")).typed().Kind; k != KindRequestExpired {
		t.Fatalf("REQUEST_EXPIRED typed as %v", k)
	}
	if k := judge(detailed(t, codes.NotFound, "x", "LEASE_NOT_LIVE", "lease_id")).typed().Kind; k != KindNotFound {
		t.Fatalf("LEASE_NOT_LIVE typed as %v", k)
	}
	// A message that says "request_expired" without the reason is not one.
	plain := judge(&rpcError{st: status.New(codes.FailedPrecondition, "request_expired: by text only")}).typed()
	if plain.Kind != KindFailedPrecondition || plain.Reason != "" {
		t.Fatalf("status without details typed %+v", plain)
	}
	// Without details, the gRPC code decides.
	if k := judge(&rpcError{st: status.New(codes.PermissionDenied, "")}).typed().Kind; k != KindPermissionDenied {
		t.Fatalf("PermissionDenied without details typed %v", k)
	}
}

// L3: not-leader and no-quorum answers are retried (a redirect is the
// server's own answer); a server's refusal is final; a broken connection
// is retried.
func TestRetryJudgement(t *testing.T) {
	redirect := detailed(t, codes.Unavailable, "not the leader", "NOT_LEADER", "")
	redirect.md = metadata.Pairs(leaderMetadata, "127.0.0.1:7002")
	f := judge(redirect)
	if !f.retryable() || !f.answered || leaderHint(f.md) != "127.0.0.1:7002" {
		t.Fatalf("redirect judged %+v", f)
	}
	if f := judge(detailed(t, codes.Unavailable, "no quorum", "NO_QUORUM", "")); !f.retryable() || !f.answered {
		t.Fatalf("no quorum judged %+v", f)
	}
	if f := judge(detailed(t, codes.FailedPrecondition, "stale token", "FAILED_PRECONDITION", "")); f.retryable() {
		t.Fatal("a refusal is retried")
	}
	transport := judge(&rpcError{st: status.New(codes.Unavailable, "connection refused")})
	if !transport.retryable() || transport.answered {
		t.Fatalf("transport failure judged %+v", transport)
	}
	if f := judge(&rpcError{st: status.New(codes.DeadlineExceeded, "attempt timed out")}); !f.retryable() {
		t.Fatal("an attempt timeout is final")
	}
}

// S1/S8: a refusal because of the resource's state matches its reason.
func TestNotGrantedMatchesItsReason(t *testing.T) {
	var err error = &NotGrantedError{Resource: "r", Reason: ReasonHeld, HolderLeaseID: 9}
	if !errors.Is(err, ErrHeld) || !errors.Is(err, ErrNotGranted) || errors.Is(err, ErrWaitTimeout) {
		t.Fatal("errors.Is on NotGrantedError")
	}
	var lost error = &LostError{Reason: LostExpired, LeaseID: 3}
	if !errors.Is(lost, ErrSessionLost) || errors.Is(lost, ErrSessionClosed) {
		t.Fatal("errors.Is on LostError")
	}
}
