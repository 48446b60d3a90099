package warden

import (
	"context"
	"sync"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// DefaultMaxRequestsInFlight is the in-flight window used when the server
// does not publish one (ClusterStatusResponse.max_requests_in_flight): the
// number of outcomes the server keeps per client above the watermark it
// knows (docs/semantics.md S7).
const DefaultMaxRequestsInFlight = 64

// requestIDs hands out request ids and keeps the acknowledged watermark
// (docs/semantics.md S7).
//
// Each new mutating request takes the next id (from 1; 0 is "none" on the
// wire); its retries reuse it. The watermark (acked_request_id) is the
// highest id such that it and every lower id have been answered: the
// client never retries them, so the server may forget their outcomes. A
// request counts as answered when its call returns, with any result. At
// most `window` ids are handed out past the watermark; a further request
// waits for the oldest to return, as a TCP sender waits for its window:
// with more in flight, one slow request could arrive after the server had
// recorded `window` later ones, dropped its outcome floor above it, and be
// refused as expired although it never ran.
type requestIDs struct {
	mu         sync.Mutex
	lastIssued uint64
	inFlight   map[uint64]struct{}
	window     uint64
	// Closed (and replaced) whenever a request returns.
	returned chan struct{}
}

func newRequestIDs(window uint64) *requestIDs {
	return &requestIDs{inFlight: map[uint64]struct{}{}, window: window, returned: make(chan struct{})}
}

// ackedLocked is the watermark: one below the oldest id in flight, or the
// last issued id when none is.
func (r *requestIDs) ackedLocked() uint64 {
	oldest := uint64(0)
	for id := range r.inFlight {
		if oldest == 0 || id < oldest {
			oldest = id
		}
	}
	if oldest == 0 {
		return r.lastIssued
	}
	return oldest - 1
}

// inFlightRequest is one request id; finish marks it answered.
type inFlightRequest struct {
	ids       *requestIDs
	requestID uint64
	// The watermark sent with every attempt of this request (fixed here,
	// so every retry is byte-identical).
	ackedRequestID uint64
	once           sync.Once
}

// begin takes the next id, first waiting (while ctx allows) until it is
// within the window of the watermark.
func (r *requestIDs) begin(ctx context.Context) (*inFlightRequest, error) {
	for {
		r.mu.Lock()
		acked := r.ackedLocked()
		if r.lastIssued-acked < r.window {
			r.lastIssued++
			r.inFlight[r.lastIssued] = struct{}{}
			req := &inFlightRequest{ids: r, requestID: r.lastIssued, ackedRequestID: acked}
			r.mu.Unlock()
			return req, nil
		}
		wait := r.returned
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, asContextError(ctx)
		}
	}
}

// setWindow applies the window the server publishes (never 0).
func (r *requestIDs) setWindow(n uint64) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	r.window = n
	close(r.returned)
	r.returned = make(chan struct{})
	r.mu.Unlock()
}

// acked is the current watermark.
func (r *requestIDs) acked() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ackedLocked()
}

func (q *inFlightRequest) finish() {
	q.once.Do(func() {
		r := q.ids
		r.mu.Lock()
		delete(r.inFlight, q.requestID)
		close(r.returned)
		r.returned = make(chan struct{})
		r.mu.Unlock()
	})
}

func (q *inFlightRequest) header(clientID uint64) *wardenpb.RequestHeader {
	return &wardenpb.RequestHeader{ClientId: clientID, RequestId: q.requestID, AckedRequestId: q.ackedRequestID}
}
