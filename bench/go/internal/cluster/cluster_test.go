package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// poll (waitLeader's and waitReady's loop: a row is measured only on a
// cluster that is whole, docs/benchmarks.md) returns as soon as the probe
// succeeds, and on the deadline names the probe's last real answer, not the
// deadline that cut the last probe short.
func TestPollReturnsOnSuccessOrNamesTheLastAnswer(t *testing.T) {
	c := &Cluster{}
	calls := 0
	err := c.poll(context.Background(), 10*time.Second, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("poll: %v after %d probes; want nil after 3", err, calls)
	}

	err = c.poll(context.Background(), 120*time.Millisecond, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Millisecond):
			return errors.New("node 2 not ready (last /readyz: 503 bootstrapping)")
		}
	})
	if err == nil || !strings.Contains(err.Error(), "503 bootstrapping") || !strings.Contains(err.Error(), "within 120ms") {
		t.Fatalf("poll past its deadline: %v; want the last answer and the time waited", err)
	}
}
