package warden

import (
	"context"

	"google.golang.org/grpc"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// Lock/CancelWait: a committed, exactly-once removal of the caller's wait
// (docs/semantics.md S8). If the grant won the race, the cancel releases
// it; if the acquire has not applied yet, it is refused ("cancelled") when
// it does.
const cancelWaitMethod = wardenpb.Lock_CancelWait_FullMethodName

// CancelOutcome is what a cancel of a wait did.
type CancelOutcome string

// The server's outcomes.
const (
	// The waiter was removed from the queue.
	CancelRemoved CancelOutcome = "removed"
	// The grant won the race; the cancel released it.
	CancelReleased CancelOutcome = "released"
	// The acquire had not applied yet; it is refused ("cancelled") when it
	// does.
	CancelPreempted CancelOutcome = "preempted"
	// Neither a waiter nor a grant of that acquire was left (it had been
	// answered: timed out, not granted, released).
	CancelNone CancelOutcome = "none"
)

// cancelWaitResult is a CancelWait reply.
type cancelWaitResult struct {
	Outcome      CancelOutcome
	LeaseID      uint64
	FencingToken uint64
}

// cancelWait removes the wait of the acquire with request id acquireID
// (this client's), through the retry loop with its own request id.
func (c *Client) cancelWait(ctx context.Context, acquireID uint64, resource string) (cancelWaitResult, error) {
	req, err := c.begin(ctx)
	if err != nil {
		return cancelWaitResult{}, err
	}
	defer req.finish()
	msg := &wardenpb.CancelWaitRequest{
		Header:           req.header(c.clientID),
		AcquireRequestId: acquireID,
		Resource:         resource,
	}
	var out cancelWaitResult
	err = c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		reply, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.CancelWaitResponse, error) {
			return wardenpb.NewLockClient(conn).CancelWait(ctx, msg, o...)
		})
		if err != nil {
			return err
		}
		out = cancelWaitResult{
			Outcome:      CancelOutcome(reply.GetOutcome()),
			LeaseID:      reply.GetLeaseId(),
			FencingToken: reply.GetFencingToken(),
		}
		return nil
	})
	return out, err
}
