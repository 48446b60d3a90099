package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// conformance: C01-acquire-renew-release
// Defends S3 (a lease is held while renewed), S4 (validity counts from the
// renew's send) and S6 (release frees exactly the grant).
func TestC01AcquireRenewRelease(t *testing.T) {
	cl := newClient(t, shared, "root")
	ctx := ctxFor(t, 30*time.Second)
	const ttl = 5 * time.Second
	beforeGrant := bootNow(t)
	s, err := cl.Session(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	afterGrant := bootNow(t)
	// valid_until = the lease grant's send + TTL × (1 − 2ρ) − 50 ms: after
	// the send, before send + TTL.
	first := s.ValidUntil()
	if first < beforeGrant+warden.Validity(ttl) || first > afterGrant+warden.Validity(ttl) {
		t.Fatalf("valid_until %v is not send + validity for a send within [%v, %v]", first, beforeGrant, afterGrant)
	}
	if first <= afterGrant || first >= beforeGrant+ttl {
		t.Fatalf("valid_until %v is not within (send, send + TTL)", first)
	}
	g, err := s.TryLock(ctx, "c01-orders")
	if err != nil {
		t.Fatal(err)
	}
	if g.FencingToken() < 1 || g.LeaseID() < 1 || g.LeaseID() != s.LeaseID() {
		t.Fatalf("token %d, lease %d (session %d)", g.FencingToken(), g.LeaseID(), s.LeaseID())
	}
	st, err := cl.Status(ctx, "c01-orders")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.LeaseID != g.LeaseID() || st.Holder.FencingToken != g.FencingToken() {
		t.Fatalf("status names %+v, the guard lease %d token %d", st.Holder, g.LeaseID(), g.FencingToken())
	}
	// One background renew (every TTL/3) moves valid_until forward.
	eventually(t, 5*time.Second, "a background renew moves valid_until", func(context.Context) error {
		if g.ValidUntil() <= first {
			return fmt.Errorf("valid_until still %v", g.ValidUntil())
		}
		return nil
	})
	if v, now := g.ValidUntil(), bootNow(t); v <= now || v > now+ttl {
		t.Fatalf("after the renew valid_until %v is not within (now, now + TTL) at %v", v, now)
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if err := g.Release(ctx); err != nil {
		t.Fatal(err)
	}
	st, err = cl.Status(ctx, "c01-orders")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder != nil {
		t.Fatalf("after release the holder is %+v", st.Holder)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(s.Err(), warden.ErrSessionClosed) {
		t.Fatalf("closed session's Err: %v", s.Err())
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}
	_, err = cl.LeaseTimeToLive(ctx, s.LeaseID())
	wardenError(t, err, warden.KindNotFound)
}

// conformance: C02-held-not-granted
// Defends S1 (one holder at a time): a second try-lock gets a typed "held"
// answer naming the holder's lease.
func TestC02HeldNotGranted(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	a := newSession(t, newClient(t, shared, "root"), 5*time.Second)
	b := newSession(t, newClient(t, shared, "root"), 5*time.Second)
	ga, err := a.TryLock(ctx, "c02-r")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.TryLock(ctx, "c02-r")
	var ng *warden.NotGrantedError
	if !errors.As(err, &ng) || !errors.Is(err, warden.ErrHeld) {
		t.Fatalf("want a NotGrantedError (held), got %T: %v", err, err)
	}
	if ng.HolderLeaseID != a.LeaseID() || ng.Resource != "c02-r" {
		t.Fatalf("held by lease %d on %q, want A's lease %d", ng.HolderLeaseID, ng.Resource, a.LeaseID())
	}
	st, err := a.Client().Status(ctx, "c02-r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.LeaseID != a.LeaseID() || st.Holder.FencingToken != ga.FencingToken() {
		t.Fatalf("A no longer holds: %+v", st.Holder)
	}
}

// conformance: C03-fifo-five-waiters
// Defends S2 (tokens grow) and S8 (the queue is FIFO): five waiters, each
// queued after the previous one, are granted in that order with growing
// tokens above the holder's.
func TestC03FifoFiveWaiters(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	h := newSession(t, newClient(t, shared, "root"), 5*time.Second)
	gh, err := h.TryLock(ctx, "c03-r")
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		waiter int
		token  uint64
		err    error
	}
	grants := make(chan grant, 5)
	var wg sync.WaitGroup
	for i := 1; i <= 5; i++ {
		w := newSession(t, newClient(t, shared, "root"), 5*time.Second)
		queued := make(chan struct{})
		var once sync.Once
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := w.LockWithTimeout(ctx, "c03-r", 30*time.Second, warden.OnQueued(func(q warden.Queued) {
				if q.LeaseID == w.LeaseID() {
					once.Do(func() { close(queued) })
				}
			}))
			if err != nil {
				grants <- grant{waiter: i, err: err}
				once.Do(func() { close(queued) })
				return
			}
			grants <- grant{waiter: i, token: g.FencingToken()}
			// Release at once so the next waiter is granted.
			grants <- grant{waiter: -i, err: g.Release(ctx)}
		}()
		select {
		case <-queued:
		case <-ctx.Done():
			t.Fatalf("waiter %d never reported queued", i)
		}
	}
	if err := gh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var order []int
	last := gh.FencingToken()
	for len(order) < 5 {
		select {
		case g := <-grants:
			if g.err != nil {
				t.Fatalf("waiter %d: %v", g.waiter, g.err)
			}
			if g.waiter < 0 {
				continue
			}
			if g.token <= last {
				t.Fatalf("waiter %d got token %d, not above %d", g.waiter, g.token, last)
			}
			last = g.token
			order = append(order, g.waiter)
		case <-ctx.Done():
			t.Fatalf("grants so far %v", order)
		}
	}
	wg.Wait()
	for i, w := range order {
		if w != i+1 {
			t.Fatalf("grant order %v, want [1 2 3 4 5]", order)
		}
	}
}

// conformance: C04-wait-timeout-leaves-no-waiter
// Defends S8: a wait that times out is answered "wait timeout" only once
// the waiter's removal committed, so no waiter is left behind.
func TestC04WaitTimeoutLeavesNoWaiter(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	h := newSession(t, newClient(t, shared, "root"), 5*time.Second)
	w := newSession(t, newClient(t, shared, "root"), 5*time.Second)
	gh, err := h.TryLock(ctx, "c04-r")
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	_, err = w.LockWithTimeout(ctx, "c04-r", time.Second)
	waited := time.Since(started)
	if !errors.Is(err, warden.ErrWaitTimeout) {
		t.Fatalf("want not granted: wait timeout, got %T: %v", err, err)
	}
	if waited < time.Second {
		t.Fatalf("wait timeout after %v, before the 1 s wait", waited)
	}
	st, err := w.Client().Status(ctx, "c04-r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Waiters != 0 {
		t.Fatalf("%d waiters left", st.Waiters)
	}
	if st.Holder == nil || st.Holder.LeaseID != h.LeaseID() || st.Holder.FencingToken != gh.FencingToken() {
		t.Fatalf("H no longer holds: %+v", st.Holder)
	}
}
