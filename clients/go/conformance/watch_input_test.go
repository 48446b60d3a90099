package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/warden-locks/warden/clients/go/internal/testcluster"
	"github.com/warden-locks/warden/clients/go/warden"
)

// conformance: C09-watch-every-grant-in-order
// Defends the watch contract (docs/operations.md "Watch"): every grant, in
// commit order with growing tokens, each followed by its release; a start
// below the retained window is a typed "compacted" error naming the oldest
// retained index.
func TestC09WatchEveryGrantInOrder(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	cl := newClient(t, shared, "root")
	w, err := cl.Watch(ctx, warden.WatchPrefix("c09-"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	s := newSession(t, cl, 5*time.Second)
	type grant struct {
		resource string
		token    uint64
	}
	var made []grant
	for _, r := range []string{"c09-a", "c09-a", "c09-a", "c09-b"} {
		g, err := s.TryLock(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, grant{r, g.FencingToken()})
		if err := g.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var lastIndex, lastToken uint64
	for i, want := range made {
		for _, kind := range []string{"granted", "released"} {
			ev, err := w.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Event != kind || ev.Resource != want.resource || ev.FencingToken != want.token || ev.LeaseID != s.LeaseID() {
				t.Fatalf("event for grant %d: %+v, want %s of %s token %d lease %d", i, ev, kind, want.resource, want.token, s.LeaseID())
			}
			if ev.Index <= lastIndex {
				t.Fatalf("event %+v at index %d, not after %d", ev, ev.Index, lastIndex)
			}
			lastIndex = ev.Index
		}
		if want.token <= lastToken {
			t.Fatalf("token %d not above %d", want.token, lastToken)
		}
		lastToken = want.token
	}

	t.Run("compacted", testC09Compacted)
}

// testC09Compacted: a node that loaded a snapshot at start never applied
// the entries the snapshot covers, so its (node-local) window starts above
// them. The shared cluster snapshots every testcluster.SnapshotThreshold
// entries: after more entries than that, a restarted follower no longer
// retains index 1.
func testC09Compacted(t *testing.T) {
	c := shared
	ctx := ctxFor(t, 60*time.Second)
	s := newSession(t, newClient(t, c, "root"), 5*time.Second)
	for i := 0; i < testcluster.SnapshotThreshold; i++ {
		g, err := s.TryLock(ctx, "c09-compact")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := c.WaitForLeader(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	follower := c.Nodes[0]
	if follower == leader {
		follower = c.Nodes[1]
	}
	if err := c.Kill(follower); err != nil {
		t.Fatal(err)
	}
	restore(t, c, follower)
	one, err := warden.New([]string{follower.Addr}, c.Options("root"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = one.Close() })
	w, err := one.Watch(ctx, warden.WatchPrefix("c09-"), 1)
	if err == nil {
		// The refusal may come with the first read.
		_, err = w.Next(ctx)
		w.Close()
	}
	var ce *warden.CompactedError
	if !errors.As(err, &ce) || !errors.Is(err, warden.ErrCompacted) {
		t.Fatalf("watch from index 1 on a restarted node: want a compacted error, got %T: %v", err, err)
	}
	if ce.OldestIndex <= 1 {
		t.Fatalf("compacted error names oldest index %d: %v", ce.OldestIndex, ce)
	}
}

// conformance: C10-bad-input-typed-error
// Defends "What bad input gets" (docs/semantics.md): each refusal is a
// typed invalid-argument error whose field comes from the status's
// google.rpc.BadRequest (and ErrorInfo reason INVALID_ARGUMENT, domain
// warden.v1), never from its text; nothing is created.
func TestC10BadInputTypedError(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	cl := newClient(t, shared, "root")
	s := newSession(t, cl, 5*time.Second)
	cases := []struct {
		name  string
		field string
		call  func() error
	}{
		{"TTL 0.5 s", "ttl_ms", func() error {
			_, err := cl.Acquire(ctx, "c10-ttl", warden.AcquireOptions{TTL: 500 * time.Millisecond})
			return err
		}},
		{"session TTL 0.5 s", "ttl_ms", func() error {
			_, err := cl.Session(ctx, 500*time.Millisecond)
			return err
		}},
		{"resource of 600 bytes", "resource", func() error {
			_, err := s.TryLock(ctx, "c10-"+strings.Repeat("x", 596))
			return err
		}},
		{"wait timeout 2 h", "wait_timeout_ms", func() error {
			_, err := s.LockWithTimeout(ctx, "c10-wait", 2*time.Hour)
			return err
		}},
	}
	for _, tc := range cases {
		err := tc.call()
		we := wardenError(t, err, warden.KindInvalidArgument)
		if we.Field != tc.field || we.Reason != "INVALID_ARGUMENT" || we.Code != codes.InvalidArgument {
			t.Fatalf("%s: field %q reason %q code %v, want field %q (%v)", tc.name, we.Field, we.Reason, we.Code, tc.field, err)
		}
		if !errors.Is(err, warden.ErrInvalidArgument) {
			t.Fatalf("%s: errors.Is(ErrInvalidArgument) is false", tc.name)
		}
	}
	locks, err := cl.List(ctx, "c10-")
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Fatalf("list c10- after bad input: %+v", locks)
	}
}
