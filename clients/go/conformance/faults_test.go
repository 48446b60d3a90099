package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/warden-locks/warden/clients/go/internal/testcluster"
	"github.com/warden-locks/warden/clients/go/warden"
)

// conformance: C05-leader-kill-keeps-lock-and-session
// Defends S3 (a renewed lease is held), L3 (calls follow the new leader)
// and L4 (a new leader keeps a live lease): SIGKILL of the leader loses
// neither the lock nor the session.
//
// It kills the shared cluster's leader (one cluster at a time on the
// machine) and brings it back at the end, waiting until all three nodes
// follow a leader and the restarted one is ready, for the scenarios after
// it.
func TestC05LeaderKillKeepsLockAndSession(t *testing.T) {
	c := shared
	ctx := ctxFor(t, 60*time.Second)
	cl := newClient(t, c, "root")
	s := newSession(t, cl, 10*time.Second)
	g, err := s.TryLock(ctx, "c05-r")
	if err != nil {
		t.Fatal(err)
	}
	// check() passes throughout: sampled until the test ends.
	stop := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				checked <- nil
				return
			case <-tick.C:
				if err := g.Check(); err != nil {
					checked <- err
					return
				}
			}
		}
	}()
	leader, err := c.WaitForLeader(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restore(t, c, leader) })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	eventually(t, 10*time.Second, "another node leads", func(context.Context) error {
		n, err := c.WaitForLeader(wctx, 2)
		if err != nil {
			return err
		}
		if n == leader {
			return fmt.Errorf("node %d (killed) still named leader", n.ID)
		}
		return nil
	})
	st, err := cl.Status(ctx, "c05-r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.LeaseID != s.LeaseID() || st.Holder.FencingToken != g.FencingToken() {
		t.Fatalf("after the failover c05-r is held by %+v, want lease %d token %d", st.Holder, s.LeaseID(), g.FencingToken())
	}
	g2, err := s.TryLock(ctx, "c05-other")
	if err != nil {
		t.Fatal(err)
	}
	if g2.FencingToken() <= g.FencingToken() {
		t.Fatalf("second token %d not above %d", g2.FencingToken(), g.FencingToken())
	}
	// The session has lived through at least one renew at the new leader.
	vu := s.ValidUntil()
	eventually(t, 10*time.Second, "a renew at the new leader", func(context.Context) error {
		if s.ValidUntil() <= vu {
			return errors.New("valid_until has not moved")
		}
		return nil
	})
	close(stop)
	if err := <-checked; err != nil {
		t.Fatalf("check() failed during the failover: %v", err)
	}
}

// conformance: C06-cut-off-client-sees-lost-first
// Defends S5 (the holder knows first) and L1 (no two holders): a client cut
// off by the proxy sees its session lost, no later than its valid_until,
// before anyone else is granted its lock.
func TestC06CutOffClientSeesLostFirst(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	leader, err := shared.WaitForLeader(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testcluster.NewProxy(leader.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	ca, err := warden.New([]string{proxy.Addr()}, shared.Options("root"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ca.Close() })
	a, err := ca.Session(ctx, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := a.TryLock(ctx, "c06-r")
	if err != nil {
		t.Fatal(err)
	}
	b := newSession(t, newClient(t, shared, "root"), 10*time.Second)

	// Monotonic time of the test process: when A saw the loss, and when B's
	// grant was observed.
	lostAt := make(chan time.Time, 1)
	go func() {
		<-a.Done()
		lostAt <- time.Now()
	}()
	proxy.Cut()
	type result struct {
		g  *warden.Guard
		at time.Time
		e  error
	}
	granted := make(chan result, 1)
	go func() {
		g, err := b.LockWithTimeout(ctx, "c06-r", 20*time.Second)
		granted <- result{g, time.Now(), err}
	}()

	var lost time.Time
	select {
	case lost = <-lostAt:
	case r := <-granted:
		t.Fatalf("B was granted (%v) before A saw the loss", r.e)
	case <-ctx.Done():
		t.Fatal("A never saw the loss")
	}
	var le *warden.LostError
	if err := a.Check(); !errors.As(err, &le) || le.Reason != warden.LostExpired {
		t.Fatalf("A's check after the loss: %v", err)
	}
	if le.At > le.ValidUntil || le.ValidUntil != a.ValidUntil() {
		t.Fatalf("A declared the loss at %v on its clock, after its valid_until %v (session says %v)", le.At, le.ValidUntil, a.ValidUntil())
	}
	r := <-granted
	if r.e != nil {
		t.Fatalf("B: %v", r.e)
	}
	if !lost.Before(r.at) {
		t.Fatalf("A lost at %v, B granted at %v: not after", lost, r.at)
	}
	if r.g.FencingToken() <= ga.FencingToken() {
		t.Fatalf("B's token %d not above A's %d", r.g.FencingToken(), ga.FencingToken())
	}
}

// conformance: C07-dropped-acquire-reply-one-grant
// Defends S7 (exactly-once): the reply to an acquire is lost after the
// grant committed; the client's retry, with the same request id, returns
// that grant and makes no second lease or grant.
func TestC07DroppedAcquireReplyOneGrant(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	leader, err := shared.WaitForLeader(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testcluster.NewProxy(leader.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	cl, err := warden.New([]string{proxy.Addr()}, shared.Options("root"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	direct := newClient(t, shared, "root")
	// The connection through the proxy is up before replies are dropped.
	if _, err := cl.Status(ctx, "c07-r"); err != nil {
		t.Fatal(err)
	}
	proxy.SwallowReplies()
	type result struct {
		g *warden.Grant
		e error
	}
	done := make(chan result, 1)
	go func() {
		g, err := cl.Acquire(ctx, "c07-r", warden.AcquireOptions{TTL: 10 * time.Second})
		done <- result{g, err}
	}()
	// The grant commits while every reply is dropped; only then does the
	// proxy let the client through again.
	var holder *warden.Holder
	eventually(t, 10*time.Second, "the acquire commits", func(ctx context.Context) error {
		st, err := direct.Status(ctx, "c07-r")
		if err != nil {
			return err
		}
		if st.Holder == nil {
			return errors.New("no holder yet")
		}
		holder = st.Holder
		return nil
	})
	proxy.Resume()
	r := <-done
	if r.e != nil {
		t.Fatal(r.e)
	}
	t.Cleanup(func() { _ = direct.Revoke(context.Background(), r.g.LeaseID) })
	if proxy.Swallowed() == 0 || proxy.Accepted() < 2 {
		t.Fatalf("the reply was not dropped and retried (swallowed %d reads, %d connections)", proxy.Swallowed(), proxy.Accepted())
	}
	if r.g.LeaseID != holder.LeaseID || r.g.FencingToken != holder.FencingToken {
		t.Fatalf("the client got lease %d token %d; the cluster holds lease %d token %d",
			r.g.LeaseID, r.g.FencingToken, holder.LeaseID, holder.FencingToken)
	}
	locks, err := direct.List(ctx, "c07-")
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 1 || locks[0].Holder == nil || locks[0].Holder.LeaseID != r.g.LeaseID || len(locks[0].Waiters) != 0 {
		t.Fatalf("list c07-: %+v", locks)
	}
	info, err := direct.LeaseTimeToLive(ctx, r.g.LeaseID)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Locks) != 1 || info.Locks[0] != "c07-r" || len(info.Waits) != 0 {
		t.Fatalf("lease %d holds %v and waits on %v", r.g.LeaseID, info.Locks, info.Waits)
	}
}

// conformance: C08-election-failover-larger-token
// Defends S2 (each term's token is larger) and L1 (one leader at a time):
// when the leader's session closes, the waiting campaigner is elected with
// a larger token, and an observer sees both terms in order.
func TestC08ElectionFailoverLargerToken(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	a := newSession(t, newClient(t, shared, "root"), 3*time.Second)
	b := newSession(t, newClient(t, shared, "root"), 3*time.Second)
	la, err := warden.NewElection(a, "c08-e").Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	observerClient := newClient(t, shared, "root")
	obs, err := observerClient.Observe(ctx, "c08-e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(obs.Close)

	queued := make(chan struct{})
	var once sync.Once
	type result struct {
		l *warden.Leadership
		e error
	}
	elected := make(chan result, 1)
	go func() {
		l, err := warden.NewElection(b, "c08-e").Campaign(ctx, "b", warden.OnQueued(func(warden.Queued) {
			once.Do(func() { close(queued) })
		}))
		elected <- result{l, err}
	}()
	select {
	case <-queued:
	case r := <-elected:
		t.Fatalf("B elected while A leads: %v", r.e)
	case <-ctx.Done():
		t.Fatal("B never queued")
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-elected
	if r.e != nil {
		t.Fatal(r.e)
	}
	if r.l.FencingToken() <= la.FencingToken() {
		t.Fatalf("B's token %d not above A's %d", r.l.FencingToken(), la.FencingToken())
	}
	want := []warden.LeaderInfo{
		{LeaseID: a.LeaseID(), FencingToken: la.FencingToken(), Value: "a"},
		{LeaseID: b.LeaseID(), FencingToken: r.l.FencingToken(), Value: "b"},
	}
	for i, w := range want {
		got, err := obs.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Fatalf("observed leader %d: %+v, want %+v", i, got, w)
		}
	}
	leader, err := observerClient.Leader(ctx, "c08-e")
	if err != nil {
		t.Fatal(err)
	}
	if leader == nil || leader.Value != "b" || leader.FencingToken != r.l.FencingToken() {
		t.Fatalf("leader(c08-e) = %+v", leader)
	}
	if err := r.l.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// restore restarts node n of c (killed by the test) and waits (deadline
// 30 s) until every node follows a leader and n is ready again.
func restore(t *testing.T, c *testcluster.Cluster, n *testcluster.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Restart(n); err != nil {
		t.Fatalf("restart node %d: %v", n.ID, err)
	}
	if _, err := c.WaitForLeader(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, n); err != nil {
		t.Fatal(err)
	}
}
