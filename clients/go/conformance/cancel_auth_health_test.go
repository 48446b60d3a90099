package conformance

// The scenarios of the cancel of a wait (Lock/CancelWait), of lease owners
// (principals from client certificates, roles granted by root through the
// CLI) and of gRPC's standard services (health and reflection, over TLS
// without a client certificate).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/warden-locks/warden/clients/go/warden"
)

// conformance: C11-abandoned-wait-leaves-no-waiter
// Defends S8 (a waiter whose client cancelled is removed and never
// granted): cancelling the context of a waiting Lock sends the server's
// committed CancelWait, so nothing is left queued behind the caller.
func TestC11AbandonedWaitLeavesNoWaiter(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	h := newSession(t, newClient(t, shared, "root"), 5*time.Second)
	w := newSession(t, newClient(t, shared, "root"), 10*time.Second)
	gh, err := h.TryLock(ctx, "c11-r")
	if err != nil {
		t.Fatal(err)
	}
	wctx, abandon := context.WithCancel(ctx)
	queued := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := w.LockWithTimeout(wctx, "c11-r", 30*time.Second, warden.OnQueued(func(warden.Queued) {
			select {
			case queued <- struct{}{}:
			default:
			}
		}))
		done <- err
	}()
	select {
	case <-queued:
	case err := <-done:
		t.Fatalf("W's lock ended before it queued: %v", err)
	case <-ctx.Done():
		t.Fatal("W never queued")
	}
	abandon()
	err = <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned lock: want context.Canceled, got %v", err)
	}
	var we *warden.Error
	if errors.As(err, &we) && we.Kind != warden.KindCanceled {
		t.Fatalf("the cancel of the wait failed: %v", err)
	}
	if err := gh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "no waiter and no holder on c11-r", func(ctx context.Context) error {
		st, err := h.Client().Status(ctx, "c11-r")
		if err != nil {
			return err
		}
		if st.Waiters != 0 || st.Holder != nil {
			return fmt.Errorf("%d waiters, holder %+v", st.Waiters, st.Holder)
		}
		return nil
	})
	info, err := w.Client().LeaseTimeToLive(ctx, w.LeaseID())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Locks) != 0 || len(info.Waits) != 0 {
		t.Fatalf("W's lease holds %v and waits on %v", info.Locks, info.Waits)
	}
	if err := w.Check(); err != nil {
		t.Fatalf("W's session after the abandon: %v", err)
	}
}

// conformance: C12-other-principal-lease-refused
// Defends lease ownership (docs/security.md; etcd PR 8031): with alice's
// exact lease id and token, bob can release, renew, revoke and acquire on
// nothing of hers.
func TestC12OtherPrincipalLeaseRefused(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	if _, err := shared.CLI(ctx, "root", "role", "grant", "c12-lockers", "--prefix", "c12-", "--permission", "lock"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"alice", "bob"} {
		if _, err := shared.CLI(ctx, "root", "user", "grant-role", p, "c12-lockers"); err != nil {
			t.Fatal(err)
		}
	}
	alice := newSession(t, newClient(t, shared, "alice"), 10*time.Second)
	g, err := alice.TryLock(ctx, "c12-r")
	if err != nil {
		t.Fatal(err)
	}
	bob := newClient(t, shared, "bob")
	lease := alice.LeaseID()
	absent := lease + 1_000_000
	calls := []struct {
		name string
		call func(id uint64) error
	}{
		{"release", func(id uint64) error { _, err := bob.Release(ctx, id, "c12-r", g.FencingToken()); return err }},
		{"renew", func(id uint64) error { _, err := bob.Renew(ctx, id); return err }},
		{"keep-alive", func(id uint64) error { _, err := bob.KeepAliveOnce(ctx, id); return err }},
		{"revoke", func(id uint64) error { return bob.Revoke(ctx, id) }},
		{"acquire on alice's lease", func(id uint64) error {
			_, err := bob.Acquire(ctx, "c12-bob", warden.AcquireOptions{LeaseID: id})
			return err
		}},
	}
	// An answer as text, the id asked about written as "ID".
	answer := func(err error, id uint64) string {
		var we *warden.Error
		if err == nil {
			return "ok"
		}
		if !errors.As(err, &we) {
			return "untyped: " + strings.ReplaceAll(err.Error(), fmt.Sprint(id), "ID")
		}
		return fmt.Sprintf("%v %s %s", we.Kind, we.Reason, strings.ReplaceAll(we.Message, fmt.Sprint(id), "ID"))
	}
	for _, c := range calls {
		owned, none := c.call(lease), c.call(absent)
		if c.name == "release" || c.name == "acquire on alice's lease" {
			wardenError(t, owned, warden.KindNotFound)
		}
		if a, b := answer(owned, lease), answer(none, absent); a != b {
			t.Fatalf("bob's %s: alice's lease answers %q, a lease that does not exist %q", c.name, a, b)
		}
	}
	st, err := alice.Client().Status(ctx, "c12-r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.LeaseID != lease || st.Holder.FencingToken != g.FencingToken() {
		t.Fatalf("alice no longer holds c12-r: %+v", st.Holder)
	}
	if err := alice.Check(); err != nil {
		t.Fatal(err)
	}
}

// conformance: C13-grpc-health-and-reflection
// Defends gRPC's standard services (docs/operations.md): every node answers
// grpc.health.v1.Health SERVING once /readyz says ready (over TLS without a
// client certificate), and server reflection lists Warden's services.
func TestC13GrpcHealthAndReflection(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	cfg, err := shared.CAOnlyTLS()
	if err != nil {
		t.Fatal(err)
	}
	creds := credentials.NewTLS(cfg)
	for _, n := range shared.Nodes {
		if err := shared.WaitReady(ctx, n); err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient("passthrough:///"+n.Addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		// /readyz said ready: the health check must say SERVING (polled
		// only across a connection that is still being set up).
		eventually(t, 10*time.Second, fmt.Sprintf("node %d health check", n.ID), func(ctx context.Context) error {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			reply, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{Service: ""})
			if err != nil {
				return err
			}
			if got := reply.GetStatus(); got != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("node %d (ready) answers %v", n.ID, got)
			}
			return nil
		})
		services, err := reflectedServices(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"warden.v1.Lock", "warden.v1.Lease", "warden.v1.Watch", "warden.v1.Admin"} {
			if !slices.Contains(services, want) {
				t.Fatalf("node %d: reflection lists %v, without %s", n.ID, services, want)
			}
		}
	}
}

// reflectedServices lists services through grpc.reflection.v1 (what
// grpcurl asks first; tonic-reflection serves it).
func reflectedServices(ctx context.Context, conn *grpc.ClientConn) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(cctx)
	if err == nil {
		err = st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	}
	var resp *reflectionpb.ServerReflectionResponse
	if err == nil {
		resp, err = st.Recv()
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}
