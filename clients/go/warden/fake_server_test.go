package warden

// Tests of the client's own half of the promises against in-process fake
// nodes (loopback, ports from :0): what it sends, and what it makes of the
// answers, where a real cluster cannot be made to misbehave on cue.

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// fakeNode is one fake Warden node; its behaviour is set per test.
type fakeNode struct {
	wardenpb.UnimplementedLockServer
	wardenpb.UnimplementedLeaseServer
	addr string

	mu sync.Mutex
	// Headers of every LeaseGrant received, in order.
	grants []*wardenpb.RequestHeader
	// Answers LeaseGrant (nil: grant lease 7 with the TTL asked).
	onGrant func(n int) error
	// Answers one keep-alive: (reply, send it?) ; nil: echo, live.
	onKeepAlive func(req *wardenpb.LeaseKeepAliveRequest) (*wardenpb.LeaseKeepAliveResponse, bool)
	// Headers of every Acquire received.
	acquires []*wardenpb.RequestHeader
	// Every Acquire request received.
	acquireReqs []*wardenpb.AcquireRequest
	// Answers an Acquire with one final message (nil: queue it forever).
	onAcquire func(req *wardenpb.AcquireRequest) *wardenpb.AcquireResponse
	// CancelWait requests: (header, acquire_request_id, resource).
	cancels []cancelSeen
	// Principal (client certificate common name) of each Status call.
	statusPeers []string
	// Answers ClusterStatus (nil: Unimplemented, as a server without it).
	clusterStatus *wardenpb.ClusterStatusResponse
}

type cancelSeen struct {
	clientID, requestID, acked, acquireID uint64
	resource                              string
}

func startFake(t *testing.T, opts ...grpc.ServerOption) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{addr: ln.Addr().String()}
	srv := grpc.NewServer(opts...)
	wardenpb.RegisterLockServer(srv, n)
	wardenpb.RegisterLeaseServer(srv, n)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return n
}

func wardenStatus(code codes.Code, msg, reason string) error {
	st, _ := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain})
	return st.Err()
}

func (n *fakeNode) LeaseGrant(_ context.Context, req *wardenpb.LeaseGrantRequest) (*wardenpb.LeaseGrantResponse, error) {
	n.mu.Lock()
	n.grants = append(n.grants, proto.Clone(req.GetHeader()).(*wardenpb.RequestHeader))
	count, on := len(n.grants), n.onGrant
	n.mu.Unlock()
	if on != nil {
		if err := on(count); err != nil {
			return nil, err
		}
	}
	return &wardenpb.LeaseGrantResponse{LeaseId: 7, TtlMs: req.GetTtlMs()}, nil
}

func (n *fakeNode) LeaseKeepAlive(st grpc.BidiStreamingServer[wardenpb.LeaseKeepAliveRequest, wardenpb.LeaseKeepAliveResponse]) error {
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		n.mu.Lock()
		on := n.onKeepAlive
		n.mu.Unlock()
		reply, send := &wardenpb.LeaseKeepAliveResponse{LeaseId: req.GetLeaseId(), TtlMs: 3000, Sequence: req.GetSequence(), Live: true}, true
		if on != nil {
			reply, send = on(req)
		}
		if send {
			if err := st.Send(reply); err != nil {
				return nil
			}
		}
	}
}

func (n *fakeNode) LeaseRevoke(context.Context, *wardenpb.LeaseRevokeRequest) (*wardenpb.LeaseRevokeResponse, error) {
	return &wardenpb.LeaseRevokeResponse{LeaseId: 7, Revoked: true}, nil
}

func (n *fakeNode) Status(ctx context.Context, req *wardenpb.StatusRequest) (*wardenpb.StatusResponse, error) {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
			n.mu.Lock()
			n.statusPeers = append(n.statusPeers, ti.State.PeerCertificates[0].Subject.CommonName)
			n.mu.Unlock()
		}
	}
	return &wardenpb.StatusResponse{Resource: req.GetResource()}, nil
}

// Acquire: a waiting acquire that is queued and never granted.
func (n *fakeNode) Acquire(req *wardenpb.AcquireRequest, st grpc.ServerStreamingServer[wardenpb.AcquireResponse]) error {
	n.mu.Lock()
	n.acquires = append(n.acquires, proto.Clone(req.GetHeader()).(*wardenpb.RequestHeader))
	n.acquireReqs = append(n.acquireReqs, proto.Clone(req).(*wardenpb.AcquireRequest))
	answer := n.onAcquire
	n.mu.Unlock()
	if answer != nil {
		return st.Send(answer(req))
	}
	if err := st.Send(&wardenpb.AcquireResponse{Event: &wardenpb.AcquireResponse_Queued{Queued: &wardenpb.Queued{Position: 1, LeaseId: req.GetLeaseId()}}}); err != nil {
		return err
	}
	<-st.Context().Done()
	return status.Error(codes.Canceled, "client went away")
}

func (n *fakeNode) ClusterStatus(context.Context, *wardenpb.ClusterStatusRequest) (*wardenpb.ClusterStatusResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.clusterStatus == nil {
		return nil, status.Error(codes.Unimplemented, "ClusterStatus")
	}
	return proto.Clone(n.clusterStatus).(*wardenpb.ClusterStatusResponse), nil
}

// CancelWait records the request and answers "removed".
func (n *fakeNode) CancelWait(_ context.Context, req *wardenpb.CancelWaitRequest) (*wardenpb.CancelWaitResponse, error) {
	h := req.GetHeader()
	n.mu.Lock()
	n.cancels = append(n.cancels, cancelSeen{
		clientID: h.GetClientId(), requestID: h.GetRequestId(), acked: h.GetAckedRequestId(),
		acquireID: req.GetAcquireRequestId(), resource: req.GetResource(),
	})
	n.mu.Unlock()
	return &wardenpb.CancelWaitResponse{Resource: req.GetResource(), LeaseId: 7, Outcome: string(CancelRemoved)}, nil
}

// L3 and S7: a follower's redirect is followed at once, and every attempt
// of a mutation (the redirected one, and the retry after "outcome unknown")
// carries the same client id, request id and watermark.
func TestRedirectIsFollowedAndRetriesReuseTheRequestID(t *testing.T) {
	leader := startFake(t)
	leader.onGrant = func(n int) error {
		if n == 1 {
			return wardenStatus(codes.Unavailable, "commit outcome unknown", "OUTCOME_UNKNOWN")
		}
		return nil
	}
	// The hint rides in the trailer, as the server sends it.
	srvHint := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(leaderMetadata, leader.addr))
		return h(ctx, req)
	})
	redirecting := startFake(t, srvHint)
	redirecting.onGrant = func(int) error {
		return wardenStatus(codes.Unavailable, "not the leader", "NOT_LEADER")
	}

	c, err := New([]string{redirecting.addr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lease, err := c.LeaseGrant(context.Background(), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lease.LeaseID != 7 || c.CachedLeader() != leader.addr {
		t.Fatalf("lease %+v, cached leader %q (leader at %s)", lease, c.CachedLeader(), leader.addr)
	}
	var all []*wardenpb.RequestHeader
	all = append(all, redirecting.grants...)
	all = append(all, leader.grants...)
	// follower → leader ("outcome unknown": retry elsewhere) → follower →
	// leader, each with the first attempt's header.
	if len(redirecting.grants) < 1 || len(leader.grants) != 2 {
		t.Fatalf("attempts: %d at the follower, %d at the leader", len(redirecting.grants), len(leader.grants))
	}
	for _, h := range all {
		if h.GetClientId() != c.ClientID() || h.GetRequestId() != 1 || h.GetAckedRequestId() != 0 {
			t.Fatalf("attempt header %+v (client %d)", h, c.ClientID())
		}
	}
	// The next request moves the watermark past the answered one.
	if _, err := c.LeaseGrant(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if h := leader.grants[2]; h.GetRequestId() != 2 || h.GetAckedRequestId() != 1 {
		t.Fatalf("second request header %+v", h)
	}
}

// S5: validity counts from the send of the acknowledged keep-alive, not from
// the arrival of its reply: a reply held 300 ms by the server leaves
// valid_until at (send + validity), at least 250 ms before (arrival +
// validity).
func TestValidityCountsFromTheKeepAliveSend(t *testing.T) {
	n := startFake(t)
	var replied sync.WaitGroup
	replied.Add(1)
	var once sync.Once
	n.onKeepAlive = func(req *wardenpb.LeaseKeepAliveRequest) (*wardenpb.LeaseKeepAliveResponse, bool) {
		time.Sleep(300 * time.Millisecond) // the server's commit is slow (the fake's behaviour, not a synchronisation)
		defer once.Do(replied.Done)
		return &wardenpb.LeaseKeepAliveResponse{LeaseId: req.GetLeaseId(), TtlMs: 3000, Sequence: req.GetSequence(), Live: true}, true
	}
	c, err := New([]string{n.addr}, Options{AttemptTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Session(context.Background(), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(context.Background()) }()
	first := s.ValidUntil()
	deadline := time.Now().Add(10 * time.Second)
	for s.ValidUntil() == first {
		if time.Now().After(deadline) {
			t.Fatal("no keep-alive acknowledged")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
	arrived, _ := BootClock{}.Now()
	sent := s.ValidUntil() - Validity(3*time.Second)
	if arrived-sent < 250*time.Millisecond {
		t.Fatalf("valid_until counts from %v, only %v before the reply arrived: not the send time", sent, arrived-sent)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// S5: with no keep-alive acknowledged, the session is lost no later than
// valid_until: Done closes, Err and Check say LostExpired, and the loss is
// declared at or before valid_until on the session clock.
func TestSessionIsLostByValidUntilWithoutAcknowledgement(t *testing.T) {
	n := startFake(t)
	n.onKeepAlive = func(*wardenpb.LeaseKeepAliveRequest) (*wardenpb.LeaseKeepAliveResponse, bool) { return nil, false }
	c, err := New([]string{n.addr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Session(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	until := s.ValidUntil()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("never lost")
	}
	var le *LostError
	if !errors.As(s.Err(), &le) || le.Reason != LostExpired || le.ValidUntil != until || le.At > until {
		t.Fatalf("lost %+v (valid until %v)", s.Err(), until)
	}
	if err := s.Check(); !errors.Is(err, ErrSessionLost) {
		t.Fatalf("check after the loss: %v", err)
	}
	if _, err := s.TryLock(context.Background(), "r"); !errors.Is(err, ErrSessionLost) {
		t.Fatalf("lock on a lost session: %v", err)
	}
}

// S5: a keep-alive reply `live: false` loses the session at once, for good.
func TestSessionIsLostWhenTheServerSaysTheLeaseIsGone(t *testing.T) {
	n := startFake(t)
	n.onKeepAlive = func(req *wardenpb.LeaseKeepAliveRequest) (*wardenpb.LeaseKeepAliveResponse, bool) {
		return &wardenpb.LeaseKeepAliveResponse{LeaseId: req.GetLeaseId(), Sequence: req.GetSequence(), Live: false}, true
	}
	c, err := New([]string{n.addr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Session(context.Background(), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("never lost")
	}
	var le *LostError
	if !errors.As(s.Err(), &le) || le.Reason != LostLeaseGone || le.LeaseID != 7 {
		t.Fatalf("lost %+v", s.Err())
	}
}

// S8: a caller that abandons a waiting lock (its context is cancelled)
// sends CancelWait naming the acquire's request id and resource, with its
// own request id, while the acquire's id is still in flight (so the server
// keeps its outcome); the lock returns the context's error.
func TestAbandonedLockSendsCancelWait(t *testing.T) {
	n := startFake(t)
	c, err := New([]string{n.addr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Session(context.Background(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(context.Background()) }()
	ctx, abandon := context.WithCancel(context.Background())
	_, err = s.Lock(ctx, "orders", OnQueued(func(Queued) { abandon() }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned lock: %v", err)
	}
	var we *Error
	if !errors.As(err, &we) || we.Kind != KindCanceled {
		t.Fatalf("the cancel failed: %v", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.acquires) == 0 || len(n.cancels) != 1 {
		t.Fatalf("%d acquires, cancels %+v", len(n.acquires), n.cancels)
	}
	acq, cw := n.acquires[0], n.cancels[0]
	if cw.acquireID != acq.GetRequestId() || cw.resource != "orders" || cw.clientID != c.ClientID() {
		t.Fatalf("cancel %+v for acquire %+v", cw, acq)
	}
	if cw.requestID <= acq.GetRequestId() || cw.acked >= acq.GetRequestId() {
		t.Fatalf("cancel request %d with watermark %d: the acquire %d must still be in flight", cw.requestID, cw.acked, acq.GetRequestId())
	}
}

// S7 and elections: the in-flight window and the election key prefix are
// the ones the server publishes in ClusterStatus, not the client's
// defaults; a server that sends 0 / "" leaves the defaults.
func TestPublishedWindowAndElectionPrefixAreRead(t *testing.T) {
	cases := []struct {
		name       string
		published  *wardenpb.ClusterStatusResponse
		wantWindow uint64
		wantPrefix string
	}{
		{"published", &wardenpb.ClusterStatusResponse{MaxRequestsInFlight: 3, ElectionPrefix: "\x01votes/"}, 3, "\x01votes/"},
		{"zero values", &wardenpb.ClusterStatusResponse{}, DefaultMaxRequestsInFlight, DefaultElectionPrefix},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := startFake(t)
			n.clusterStatus = tc.published
			c, err := New([]string{n.addr}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The first mutating call reads the published settings.
			if _, err := c.LeaseGrant(ctx, 3*time.Second); err != nil {
				t.Fatal(err)
			}
			c.ids.mu.Lock()
			window := c.ids.window
			c.ids.mu.Unlock()
			if window != tc.wantWindow {
				t.Fatalf("window %d, want %d", window, tc.wantWindow)
			}
			if got := c.electionPrefix(ctx); got != tc.wantPrefix {
				t.Fatalf("election prefix %q, want %q", got, tc.wantPrefix)
			}
		})
	}
}

// manualClock is a session clock moved by the test.
type manualClock struct{ now atomic.Int64 }

func (c *manualClock) Now() (time.Duration, error) { return time.Duration(c.now.Load()), nil }

// docs/semantics.md "Lock kinds", "Multi-locks", "Max-hold": the session's
// lock calls put mode, limit, resources and max_hold_ms on the wire; a
// guard reads slot, mode and tokens from the grant; with a max-hold its
// ValidUntil is the acquire's send + Validity(max-hold), Check fails past
// it with a MaxHoldError while the session stays valid; a waiting Lock with
// a max-hold asks for a wait shorter than it.
func TestLockKindsOnTheWireAndMaxHoldValidity(t *testing.T) {
	n := startFake(t)
	n.onKeepAlive = func(*wardenpb.LeaseKeepAliveRequest) (*wardenpb.LeaseKeepAliveResponse, bool) { return nil, false }
	n.onAcquire = func(req *wardenpb.AcquireRequest) *wardenpb.AcquireResponse {
		g := &wardenpb.Granted{Resource: req.GetResource(), LeaseId: req.GetLeaseId(), FencingToken: 40,
			Mode: req.GetMode(), MaxHoldMs: req.GetMaxHoldMs()}
		if req.GetLimit() > 0 {
			slot := uint32(2)
			g.Slot = &slot
		}
		for i, r := range req.GetResources() {
			g.Grants = append(g.Grants, &wardenpb.ResourceToken{Resource: r, FencingToken: 40 + uint64(i)})
		}
		return &wardenpb.AcquireResponse{Event: &wardenpb.AcquireResponse_Granted{Granted: g}}
	}
	c, err := New([]string{n.addr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clock := &manualClock{}
	clock.now.Store(int64(100 * time.Second))
	ctx := context.Background()
	s, err := c.Session(ctx, time.Hour, WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close(ctx) }()

	p, err := s.Semaphore("pool", 3).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slot, ok := p.Slot(); !ok || slot != 2 {
		t.Fatalf("permit slot %d %v, want 2", slot, ok)
	}
	rd, err := s.ReadLock(ctx, "rw", WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	wr, err := s.WriteLock(ctx, "rw2", WithWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rd.Mode() != ModeShared || wr.Mode() != ModeExclusive {
		t.Fatalf("modes %v %v", rd.Mode(), wr.Mode())
	}
	all, err := s.LockAll(ctx, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Tokens(); len(got) != 2 || got[0] != (ResourceToken{"a", 40}) || got[1] != (ResourceToken{"b", 41}) || all.Resource() != "a" {
		t.Fatalf("multi-lock tokens %+v resource %q", got, all.Resource())
	}
	mh, err := s.Lock(ctx, "capped", WithMaxHold(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	reqs := n.acquireReqs
	n.mu.Unlock()
	if len(reqs) != 5 {
		t.Fatalf("%d acquires sent, want 5", len(reqs))
	}
	type wire struct {
		resource  string
		mode      LockMode
		limit     uint32
		resources int
		waitMS    uint64
		maxHoldMS uint64
	}
	want := []wire{
		{"pool", ModeUnspecified, 3, 0, 0, 0},
		{"rw", ModeShared, 0, 0, 0, 0},
		{"rw2", ModeExclusive, 0, 0, 1000, 0},
		{"a", ModeUnspecified, 0, 2, uint64(MaxWait / time.Millisecond), 0},
		{"capped", ModeUnspecified, 0, 0, 1999, 2000},
	}
	for i, r := range reqs {
		got := wire{r.GetResource(), r.GetMode(), r.GetLimit(), len(r.GetResources()), r.GetWaitTimeoutMs(), r.GetMaxHoldMs()}
		if got != want[i] {
			t.Fatalf("acquire %d on the wire %+v, want %+v", i, got, want[i])
		}
	}
	until := 100*time.Second + Validity(2*time.Second)
	if mh.ValidUntil() != until || mh.MaxHold() != 2*time.Second {
		t.Fatalf("max-hold guard valid until %v (max-hold %v), want %v", mh.ValidUntil(), mh.MaxHold(), until)
	}
	if err := mh.Check(); err != nil {
		t.Fatal(err)
	}
	clock.now.Store(int64(until))
	var mhe *MaxHoldError
	if err := mh.Check(); !errors.As(err, &mhe) || mhe.ValidUntil != until || mhe.Resource != "capped" {
		t.Fatalf("past the max-hold: %T %v", err, err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("the session must stay valid: %v", err)
	}
	if err := wr.Check(); err != nil || wr.ValidUntil() != s.ValidUntil() {
		t.Fatalf("a guard without max-hold follows its session: %v, %v vs %v", err, wr.ValidUntil(), s.ValidUntil())
	}
	if _, err := s.LockAll(ctx, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an empty multi-lock: %v", err)
	}
}
