package warden

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// WatchTarget is what a watch follows: one resource, or every resource
// under a prefix.
type WatchTarget struct {
	resource string
	prefix   string
	isPrefix bool
}

// WatchResource follows one resource, by its exact name.
func WatchResource(name string) WatchTarget { return WatchTarget{resource: name} }

// WatchPrefix follows every resource whose name starts with prefix ("" =
// all).
func WatchPrefix(prefix string) WatchTarget { return WatchTarget{prefix: prefix, isPrefix: true} }

// WatchEvent is one change of the lock table, as the server streamed it.
type WatchEvent struct {
	// Log index of the committed entry that made the change; one entry
	// can make several events (a release and the handoff to the next
	// waiter), in the order it made them.
	Index    uint64
	Resource string
	// granted, released, expired, revoked, queued, cancelled, forced,
	// lock_delay_ended or proclaimed.
	Event string
	// The lease concerned; 0 when none.
	LeaseID uint64
	// The grant's token (granted) or the ended grant's (released,
	// expired, revoked, forced); 0 otherwise.
	FencingToken uint64
}

// Watcher is a running watch; see [Client.Watch]. Not safe for concurrent
// use by several goroutines.
type Watcher struct {
	c      *Client
	target WatchTarget
	// The index to ask for on reconnect, and how many of its events were
	// already returned (skipped after a reconnect: every node derives the
	// same events, in the same order, from the same entry).
	resumeIndex    uint64
	seenAtResume   int
	receivedAtRes  int
	stream         grpc.ServerStreamingClient[wardenpb.WatchEvent]
	cancelStream   context.CancelFunc
	streamHeaderMD metadata.MD
}

// Watch follows target from startIndex (0 = from now): retained events at
// or above it first, then live ones, in commit order. Any node serves a
// watch (a follower may lag the leader); when its node goes away, the
// watcher reconnects to another endpoint and resumes without gaps or
// duplicates.
//
// Errors: a [*CompactedError] (ErrCompacted) when startIndex is below the
// node's retained window, naming the oldest retained index;
// KindInvalidArgument for a bad resource or prefix; KindNoQuorum /
// KindUnavailable when no node served the watch in time.
func (c *Client) Watch(ctx context.Context, target WatchTarget, startIndex uint64) (*Watcher, error) {
	w := &Watcher{c: c, target: target, resumeIndex: startIndex}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// ResumeIndex is the index the watch would resume from now.
func (w *Watcher) ResumeIndex() uint64 { return w.resumeIndex }

// Close ends the watch.
func (w *Watcher) Close() {
	if w.cancelStream != nil {
		w.cancelStream()
		w.cancelStream = nil
		w.stream = nil
	}
}

func (w *Watcher) request() *wardenpb.WatchRequest {
	r := &wardenpb.WatchRequest{StartIndex: w.resumeIndex}
	if w.target.isPrefix {
		r.Target = &wardenpb.WatchRequest_Prefix{Prefix: w.target.prefix}
	} else {
		r.Target = &wardenpb.WatchRequest_Resource{Resource: w.target.resource}
	}
	return r
}

// connect opens the stream on some node. The server answers a watch's
// start with its response headers (or its refusal), so the attempt waits
// for those within the attempt timeout.
func (w *Watcher) connect(ctx context.Context) error {
	var compacted *CompactedError
	c := w.c
	err := c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		// The stream outlives the attempt: its context is the watcher's.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		stop := context.AfterFunc(ctx, cancel)
		st, err := wardenpb.NewWatchClient(conn).Watch(sctx, w.request())
		if err != nil {
			stop()
			cancel()
			return newRPCError(err)
		}
		var timedOut atomic.Bool
		timer := time.AfterFunc(c.opts.AttemptTimeout, func() { timedOut.Store(true); cancel() })
		header, herr := st.Header()
		timer.Stop()
		if herr == nil && len(header) == 0 {
			// Ended without headers (a trailers-only refusal): the status
			// comes with the first read.
			_, herr = st.Recv()
			if herr == nil || errors.Is(herr, io.EOF) {
				herr = status.Error(codes.Unavailable, "watch stream ended without headers")
			}
		}
		if herr != nil {
			stop()
			cancel()
			if timedOut.Load() {
				herr = status.Errorf(codes.DeadlineExceeded, "no watch headers within %d ms", c.opts.AttemptTimeout.Milliseconds())
			}
			e := newRPCError(herr, header, st.Trailer())
			if ce := judge(e).compacted(); ce != nil {
				compacted = ce
				return nil
			}
			return e
		}
		if !stop() {
			cancel()
			return newRPCError(status.Error(codes.Canceled, "watch abandoned"))
		}
		w.Close()
		w.stream, w.cancelStream, w.streamHeaderMD = st, cancel, header
		return nil
	})
	if err != nil {
		return err
	}
	if compacted != nil {
		return compacted
	}
	if w.resumeIndex == 0 {
		// "From now": pin now, so a reconnect leaves no gap.
		w.resumeIndex = mdUint(w.streamHeaderMD, startIndexMetadata)
	}
	w.receivedAtRes = 0
	return nil
}

// Next returns the next event, reconnecting (to any endpoint, within the
// client's call timeout) when the node goes away. It blocks until an event
// arrives or ctx ends; an error other than ctx's ends the watch.
func (w *Watcher) Next(ctx context.Context) (WatchEvent, error) {
	for {
		if w.stream == nil {
			if err := w.connect(ctx); err != nil {
				return WatchEvent{}, err
			}
		}
		ev, err := w.recv(ctx)
		if err == nil {
			if ev.GetIndex() == w.resumeIndex {
				w.receivedAtRes++
				if w.receivedAtRes <= w.seenAtResume {
					continue // returned before the reconnect
				}
				w.seenAtResume = w.receivedAtRes
			} else {
				w.resumeIndex = ev.GetIndex()
				w.receivedAtRes, w.seenAtResume = 1, 1
			}
			return WatchEvent{Index: ev.GetIndex(), Resource: ev.GetResource(), Event: ev.GetEvent(),
				LeaseID: ev.GetLeaseId(), FencingToken: ev.GetFencingToken()}, nil
		}
		if ctx.Err() != nil {
			return WatchEvent{}, asContextError(ctx)
		}
		var re *rpcError
		if !errors.As(err, &re) {
			return WatchEvent{}, err
		}
		f := judge(re)
		if ce := f.compacted(); ce != nil {
			return WatchEvent{}, ce
		}
		if !f.retryable() {
			return WatchEvent{}, f.typed()
		}
		// The node went away: reconnect elsewhere and resume.
		w.Close()
	}
}

// recv reads one event; ctx's end interrupts it (and ends the stream).
func (w *Watcher) recv(ctx context.Context) (*wardenpb.WatchEvent, error) {
	st, cancel := w.stream, w.cancelStream
	stop := context.AfterFunc(ctx, cancel)
	ev, err := st.Recv()
	if !stop() {
		w.stream, w.cancelStream = nil, nil
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &rpcError{st: status.New(codes.Unavailable, "watch stream ended")}
		}
		return nil, newRPCError(err, st.Trailer())
	}
	return ev, nil
}
