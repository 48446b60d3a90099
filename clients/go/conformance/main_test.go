// Package conformance runs clients/conformance/scenarios.md against a real
// three-node cluster started from WARDEN_BIN (default: the workspace's
// target/debug/warden). Each test names its scenario with the marker
// `conformance: CNN-...` that clients/conformance/check.sh looks for.
//
// Scenarios share one cluster (each uses its own resource names, prefixed
// with its id), except those that kill a node or need a different server
// (they start their own). Every wait is a deadline on a condition, never a
// sleep used to synchronise.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/warden-locks/warden/clients/go/internal/testcluster"
	"github.com/warden-locks/warden/clients/go/warden"
)

// shared is the cluster most scenarios use.
var shared *testcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := testcluster.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: cannot start the cluster: %v\n", err)
		return 1
	}
	shared = c
	defer c.Stop()
	return m.Run()
}

// newClient is a client of the shared cluster as user, closed with the test.
func newClient(t *testing.T, c *testcluster.Cluster, user string) *warden.Client {
	t.Helper()
	cl, err := c.Client(user)
	if err != nil {
		t.Fatalf("client as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// newSession opens a session closed with the test.
func newSession(t *testing.T, cl *warden.Client, ttl time.Duration) *warden.Session {
	t.Helper()
	s, err := cl.Session(ctxFor(t, 10*time.Second), ttl)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// ctxFor is a context with a deadline, cancelled with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it returns nil or the deadline passes (a
// wait with a deadline on a condition).
func eventually(t *testing.T, d time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var last error
	for {
		if last = cond(ctx); last == nil {
			return
		}
		t2 := time.NewTimer(25 * time.Millisecond)
		select {
		case <-ctx.Done():
			t2.Stop()
			t.Fatalf("%s: not within %v: %v", what, d, last)
		case <-t2.C:
		}
	}
}

// wardenError asserts err is a *warden.Error of kind and returns it.
func wardenError(t *testing.T, err error, kind warden.Kind) *warden.Error {
	t.Helper()
	var we *warden.Error
	if !errors.As(err, &we) {
		t.Fatalf("want a *warden.Error of kind %v, got %T: %v", kind, err, err)
	}
	if we.Kind != kind {
		t.Fatalf("want kind %v, got %v (reason %q): %v", kind, we.Kind, we.Reason, err)
	}
	return we
}

// bootNow reads CLOCK_BOOTTIME (the sessions' clock).
func bootNow(t *testing.T) time.Duration {
	t.Helper()
	now, err := warden.BootClock{}.Now()
	if err != nil {
		t.Fatal(err)
	}
	return now
}
