package warden

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// errLeaseGone: a keep-alive reply said `live: false`.
var errLeaseGone = errors.New("the cluster no longer has the lease")

// keepAliver renews one lease over a Lease/LeaseKeepAlive stream to the
// leader. Each request carries a new sequence number, and the send time of
// each is remembered: a reply is matched, by the sequence it echoes, to the
// send time of its own request (S5), so a late reply to an earlier request
// counts from that earlier send, never from a later one.
type keepAliver struct {
	c       *Client
	leaseID uint64
	clock   Clock
	stream  *kaStream
}

type kaStream struct {
	addr    string
	send    func(*wardenpb.LeaseKeepAliveRequest) error
	replies chan kaReply
	cancel  context.CancelFunc
	// Send times (on the session clock) of the requests sent on this
	// stream, by sequence.
	sentAt map[uint64]time.Duration
}

type kaReply struct {
	resp *wardenpb.LeaseKeepAliveResponse
	err  *rpcError
}

func (k *keepAliver) close() {
	if k.stream != nil {
		k.stream.cancel()
		k.stream = nil
	}
}

func (k *keepAliver) open(ctx context.Context, addr string) error {
	conn, err := k.c.conn(addr)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	st, err := wardenpb.NewLeaseClient(conn).LeaseKeepAlive(sctx)
	if err != nil {
		cancel()
		return newRPCError(err)
	}
	s := &kaStream{addr: addr, send: st.Send, replies: make(chan kaReply, 16), cancel: cancel, sentAt: map[uint64]time.Duration{}}
	go func() {
		for {
			r, err := st.Recv()
			var reply kaReply
			if err != nil {
				header, _ := st.Header()
				reply.err = newRPCError(err, header, st.Trailer())
			} else {
				reply.resp = r
			}
			select {
			case s.replies <- reply:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	k.stream = s
	return nil
}

// renew renews the lease once, following the leader and retrying (each
// attempt a new keep-alive with a new sequence) until an acknowledgement,
// a final answer, or ctx's end. Returns the send time of the acknowledged
// request and the TTL the server restarted. errLeaseGone when the server
// says the lease is not live; an error wrapping a [ClockError] when the
// clock failed before a send (nothing is sent with a made-up time).
func (k *keepAliver) renew(ctx context.Context) (time.Duration, time.Duration, error) {
	c := k.c
	plan, target := newCallPlan(c.endpoints, c.CachedLeader(), c.opts.BackoffCap)
	started := time.Now()
	unimplemented := map[string]bool{}
	serverAnswered := false
	last := ""
	for {
		sentAt, ttl, err := k.attempt(ctx, target)
		if err == nil {
			c.setLeader(target)
			return sentAt, ttl, nil
		}
		if ctx.Err() != nil {
			return 0, 0, asContextError(ctx)
		}
		var re *rpcError
		if !errors.As(err, &re) {
			return 0, 0, err
		}
		k.close()
		f := judge(re)
		last = target + ": " + describe(f)
		if f.st.Code() == codes.Unimplemented {
			unimplemented[target] = true
			if len(unimplemented) >= len(c.endpoints) {
				return 0, 0, f.typed()
			}
		} else if !f.retryable() {
			return 0, 0, f.typed()
		}
		serverAnswered = serverAnswered || (f.answered && f.st.Code() == codes.Unavailable)
		c.forgetLeader(target)
		pause, next := plan.afterFailure(target, leaderHint(f.md), f.answered)
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				kind := KindUnavailable
				if serverAnswered {
					kind = KindNoQuorum
				}
				return 0, 0, &Error{Kind: kind, Code: codes.Unavailable, Tried: plan.tried, Waited: time.Since(started), Last: last, cause: ctx.Err()}
			}
		}
		target = next
	}
}

// attempt sends one keep-alive at addr (opening the stream if needed) and
// waits one attempt timeout for an acknowledgement of it, or of an earlier
// request on the same stream.
func (k *keepAliver) attempt(ctx context.Context, addr string) (time.Duration, time.Duration, error) {
	if k.stream != nil && k.stream.addr != addr {
		k.close()
	}
	if k.stream == nil {
		if err := k.open(ctx, addr); err != nil {
			return 0, 0, err
		}
	}
	s := k.stream
	seq := k.c.sequence.Add(1)
	now, err := k.clock.Now()
	if err != nil {
		return 0, 0, &ClockError{Err: err}
	}
	s.sentAt[seq] = now
	// A broken stream fails the send with io.EOF; its status comes from
	// the receiver below.
	_ = s.send(&wardenpb.LeaseKeepAliveRequest{LeaseId: k.leaseID, Sequence: seq})
	timer := time.NewTimer(k.c.opts.AttemptTimeout)
	defer timer.Stop()
	for {
		select {
		case r := <-s.replies:
			if r.err != nil {
				return 0, 0, r.err
			}
			if !r.resp.GetLive() {
				return 0, 0, errLeaseGone
			}
			sent, ok := s.sentAt[r.resp.GetSequence()]
			if !ok {
				return 0, 0, &Error{Kind: KindTransport, Message: fmt.Sprintf("keep-alive reply echoes sequence %d, which this stream never sent", r.resp.GetSequence())}
			}
			// This and every earlier request are answered or superseded.
			for q := range s.sentAt {
				if q <= r.resp.GetSequence() {
					delete(s.sentAt, q)
				}
			}
			return sent, fromMS(r.resp.GetTtlMs()), nil
		case <-timer.C:
			return 0, 0, &rpcError{st: status.Newf(codes.DeadlineExceeded, "no keep-alive acknowledgement within %d ms", k.c.opts.AttemptTimeout.Milliseconds())}
		case <-ctx.Done():
			return 0, 0, asContextError(ctx)
		}
	}
}

// ClockError is a failed read of a session's clock.
type ClockError struct{ Err error }

func (e *ClockError) Error() string { return "session clock: " + e.Err.Error() }
func (e *ClockError) Unwrap() error { return e.Err }

// KeepAliveOnce renews leaseID once over a Lease/LeaseKeepAlive stream
// (what a [Session] does every TTL/3) and returns the TTL restarted.
//
// Errors: KindNotFound when the server says the lease is not live (also for
// another principal's lease); KindNoQuorum / KindUnavailable.
func (c *Client) KeepAliveOnce(ctx context.Context, leaseID uint64) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	k := &keepAliver{c: c, leaseID: leaseID, clock: BootClock{}}
	defer k.close()
	_, ttl, err := k.renew(ctx)
	if errors.Is(err, errLeaseGone) {
		return 0, &Error{Kind: KindNotFound, Code: codes.NotFound, Reason: "LEASE_NOT_LIVE", Field: "lease_id",
			Message: fmt.Sprintf("lease_id: lease %d is not live", leaseID)}
	}
	return ttl, err
}
