package warden

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every Warden error.
const ErrorDomain = "warden.v1"

// Kind says what kind of failure an [*Error] is.
type Kind int

// The kinds of [*Error]. Those the server chose (InvalidArgument ..
// RequestExpired, Unauthenticated, Unimplemented) changed nothing in the
// lock table and are never retried. NoQuorum and Unavailable come only after
// the client kept retrying (following the leader, then the other endpoints)
// until the call's deadline ran out (docs/semantics.md L3).
const (
	// KindTransport: an unexpected gRPC code or a malformed reply.
	KindTransport Kind = iota
	// KindInvalidArgument: malformed or out of bounds; Field names it.
	KindInvalidArgument
	// KindNotFound: the lease or resource named is not live.
	KindNotFound
	// KindFailedPrecondition: does not fit the current state (a stale
	// fencing token, another holder, a deposed leader's proclaim; S6).
	KindFailedPrecondition
	// KindPermissionDenied: the caller's principal may not do this.
	KindPermissionDenied
	// KindUnauthenticated: the server wants a client certificate.
	KindUnauthenticated
	// KindResourceExhausted: a table or quota is full.
	KindResourceExhausted
	// KindRequestExpired: the server no longer remembers the outcome of
	// this retried request; it may or may not have taken effect, but it
	// was not executed twice (S7).
	KindRequestExpired
	// KindNoQuorum: servers answered, but none could serve the call before
	// the deadline (no leader, no quorum).
	KindNoQuorum
	// KindUnavailable: no server could be reached before the deadline.
	KindUnavailable
	// KindUnimplemented: every node answered that it does not serve the
	// method (a server older than this client).
	KindUnimplemented
	// KindCanceled: the caller's context ended the call first.
	KindCanceled
)

var kindNames = map[Kind]string{
	KindTransport:          "transport",
	KindInvalidArgument:    "invalid argument",
	KindNotFound:           "not found",
	KindFailedPrecondition: "failed precondition",
	KindPermissionDenied:   "permission denied",
	KindUnauthenticated:    "unauthenticated",
	KindResourceExhausted:  "resource exhausted",
	KindRequestExpired:     "request expired",
	KindNoQuorum:           "no quorum",
	KindUnavailable:        "unavailable",
	KindUnimplemented:      "unimplemented",
	KindCanceled:           "canceled",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a failed call. Kind, Reason and Field come from the status's
// structured details (google.rpc.ErrorInfo and google.rpc.BadRequest), never
// from its message; a status without details falls back to its gRPC code.
//
// Match a kind with errors.Is and the sentinels (ErrInvalidArgument, ...),
// read the fields with errors.As:
//
//	var we *warden.Error
//	if errors.As(err, &we) && we.Kind == warden.KindInvalidArgument {
//		log.Printf("bad %s", we.Field)
//	}
type Error struct {
	Kind Kind
	// The gRPC code of the final status (codes.Unavailable for NoQuorum
	// and Unavailable).
	Code codes.Code
	// The ErrorInfo reason (e.g. "INVALID_ARGUMENT", "LEASE_NOT_LIVE",
	// "NOT_LEADER"); "" when the status had none.
	Reason string
	// The first BadRequest field violation's field (e.g. "ttl_ms"); "" if
	// none.
	Field string
	// The server's message (for people; never parsed), or the client's.
	Message string
	// NoQuorum / Unavailable: every address tried, in order, how long the
	// client kept trying, and the last failure seen.
	Tried  []string
	Waited time.Duration
	Last   string
	// The caller's context error, for KindCanceled.
	cause error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindNoQuorum:
		return fmt.Sprintf("no quorum: no leader served the call within %d ms (tried %s); last error: %s",
			e.Waited.Milliseconds(), strings.Join(e.Tried, ", "), e.Last)
	case KindUnavailable:
		return fmt.Sprintf("unavailable: no server reachable after trying for %d ms (tried %s); last error: %s",
			e.Waited.Milliseconds(), strings.Join(e.Tried, ", "), e.Last)
	}
	msg := e.Kind.String()
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Is matches a sentinel of the same Kind (ErrNotFound, ...), and
// context.Canceled / context.DeadlineExceeded for KindCanceled.
func (e *Error) Is(target error) bool {
	if t, ok := target.(*Error); ok {
		return t.Kind == e.Kind && (t.Reason == "" || t.Reason == e.Reason)
	}
	return e.cause != nil && errors.Is(e.cause, target)
}

// Unwrap gives the caller's context error of a KindCanceled error.
func (e *Error) Unwrap() error { return e.cause }

// Sentinels for errors.Is.
var (
	ErrInvalidArgument    = &Error{Kind: KindInvalidArgument}
	ErrNotFound           = &Error{Kind: KindNotFound}
	ErrFailedPrecondition = &Error{Kind: KindFailedPrecondition}
	ErrPermissionDenied   = &Error{Kind: KindPermissionDenied}
	ErrUnauthenticated    = &Error{Kind: KindUnauthenticated}
	ErrResourceExhausted  = &Error{Kind: KindResourceExhausted}
	ErrRequestExpired     = &Error{Kind: KindRequestExpired}
	ErrNoQuorum           = &Error{Kind: KindNoQuorum}
	ErrUnavailable        = &Error{Kind: KindUnavailable}
	ErrUnimplemented      = &Error{Kind: KindUnimplemented}
)

// NotGrantedReason is why an acquire was not granted.
type NotGrantedReason string

// The server's reasons (AcquireResponse.not_granted.reason).
const (
	ReasonHeld        NotGrantedReason = "held"
	ReasonLockDelay   NotGrantedReason = "lock_delay"
	ReasonWaitTimeout NotGrantedReason = "wait_timeout"
	// This client's CancelWait reached the server before the acquire
	// applied (its outcome "preempted"): the acquire is refused when it
	// does. Seen only by an acquire whose caller had abandoned it.
	ReasonCancelled NotGrantedReason = "cancelled"
	// A try-lock on a free resource whose queue's head is a multi-lock
	// still waiting for its other resources (docs/semantics.md
	// "Multi-locks").
	ReasonReserved NotGrantedReason = "reserved"
)

// NotGrantedError is an acquire the server refused because of the
// resource's state (not a failure of the call): held by another lease, in
// lock-delay, or the wait in the queue ran out (the waiter's removal has
// then committed, S8). Match with errors.Is(err, ErrHeld) etc.
type NotGrantedError struct {
	Resource string
	Reason   NotGrantedReason
	// The lease holding the resource; 0 if none (lock-delay, timeout).
	HolderLeaseID uint64
}

func (e *NotGrantedError) Error() string {
	if e.HolderLeaseID != 0 {
		return fmt.Sprintf("not granted: %s %q (held by lease %d)", e.Reason, e.Resource, e.HolderLeaseID)
	}
	return fmt.Sprintf("not granted: %s %q", e.Reason, e.Resource)
}

// Is matches ErrNotGranted, and ErrHeld / ErrLockDelay / ErrWaitTimeout by
// reason.
func (e *NotGrantedError) Is(target error) bool {
	t, ok := target.(*NotGrantedError)
	return ok && (t.Reason == "" || t.Reason == e.Reason)
}

// Sentinels for errors.Is on a [*NotGrantedError].
var (
	ErrNotGranted  = &NotGrantedError{}
	ErrHeld        = &NotGrantedError{Reason: ReasonHeld}
	ErrLockDelay   = &NotGrantedError{Reason: ReasonLockDelay}
	ErrWaitTimeout = &NotGrantedError{Reason: ReasonWaitTimeout}
	ErrReserved    = &NotGrantedError{Reason: ReasonReserved}
)

// CompactedError: a watch asked for an index below the node's retained
// window (gRPC OutOfRange, ErrorInfo reason COMPACTED). OldestIndex is the
// oldest index the node still retains (from the `warden-oldest-index`
// metadata); resume from there and re-read state you may have missed.
type CompactedError struct {
	OldestIndex uint64
	Message     string
}

func (e *CompactedError) Error() string { return e.Message }

// Is matches ErrCompacted.
func (e *CompactedError) Is(target error) bool {
	_, ok := target.(*CompactedError)
	return ok
}

// ErrCompacted matches any [*CompactedError].
var ErrCompacted = &CompactedError{}

// failure is one failed attempt, as the retry loop judges it.
type failure struct {
	st     *status.Status
	md     metadata.MD
	reason string
	field  string
	// The Warden server itself produced the status (it carries Warden's
	// ErrorInfo, or a leader hint), as opposed to the transport failing.
	answered bool
}

// rpcError carries a failed attempt's status and its header and trailer
// metadata (the `warden-leader` hint, `warden-oldest-index`).
type rpcError struct {
	st *status.Status
	md metadata.MD
}

func (e *rpcError) Error() string { return e.st.Err().Error() }

func newRPCError(err error, mds ...metadata.MD) *rpcError {
	return &rpcError{st: status.Convert(err), md: metadata.Join(mds...)}
}

// judge reads a failed attempt's structured details.
func judge(e *rpcError) failure {
	f := failure{st: e.st, md: e.md}
	for _, d := range e.st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() == ErrorDomain {
				f.reason = d.GetReason()
				f.answered = true
			}
		case *errdetails.BadRequest:
			if v := d.GetFieldViolations(); len(v) > 0 && f.field == "" {
				f.field = v[0].GetField()
			}
		}
	}
	if leaderHint(e.md) != "" {
		f.answered = true
	}
	return f
}

// retryable says whether another attempt (same request id) may follow:
// not the leader, no quorum, a node shutting down, a timeout, a dropped
// connection. A server's refusal is final.
func (f failure) retryable() bool {
	switch f.reason {
	case "NOT_LEADER", "NO_LEADER", "NO_QUORUM", "NOT_PROPOSED", "OUTCOME_UNKNOWN",
		"NOT_SERVING", "BOOTSTRAPPING", "SHUTTING_DOWN", "NODE_FAILED":
		return true
	case "":
	default:
		return false
	}
	switch f.st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	case codes.Unknown, codes.Internal:
		// A broken connection or HTTP/2 stream (no Warden details).
		return !f.answered
	}
	return false
}

var reasonKinds = map[string]Kind{
	"INVALID_ARGUMENT":    KindInvalidArgument,
	"NOT_FOUND":           KindNotFound,
	"LEASE_NOT_LIVE":      KindNotFound,
	"FAILED_PRECONDITION": KindFailedPrecondition,
	"PERMISSION_DENIED":   KindPermissionDenied,
	"ADMIN_DISABLED":      KindPermissionDenied,
	"UNAUTHENTICATED":     KindUnauthenticated,
	"RESOURCE_EXHAUSTED":  KindResourceExhausted,
	"REQUEST_EXPIRED":     KindRequestExpired,
}

var codeKinds = map[codes.Code]Kind{
	codes.InvalidArgument:    KindInvalidArgument,
	codes.OutOfRange:         KindInvalidArgument,
	codes.NotFound:           KindNotFound,
	codes.FailedPrecondition: KindFailedPrecondition,
	codes.PermissionDenied:   KindPermissionDenied,
	codes.Unauthenticated:    KindUnauthenticated,
	codes.ResourceExhausted:  KindResourceExhausted,
	codes.Unimplemented:      KindUnimplemented,
}

// typed turns a final failure into an [*Error]: the kind from the ErrorInfo
// reason when there is one, else from the gRPC code.
func (f failure) typed() *Error {
	kind, ok := reasonKinds[f.reason]
	if !ok {
		kind, ok = codeKinds[f.st.Code()]
		if !ok {
			kind = KindTransport
		}
	}
	msg := f.st.Message()
	if kind == KindTransport {
		msg = fmt.Sprintf("%s: %s", f.st.Code(), msg)
	}
	return &Error{Kind: kind, Code: f.st.Code(), Reason: f.reason, Field: f.field, Message: msg}
}

// compacted returns the watch's compaction error, if the failure is one.
func (f failure) compacted() *CompactedError {
	if f.reason != "COMPACTED" && !(f.reason == "" && f.st.Code() == codes.OutOfRange) {
		return nil
	}
	return &CompactedError{OldestIndex: mdUint(f.md, oldestIndexMetadata), Message: f.st.Message()}
}

func describe(f failure) string {
	if f.st.Message() == "" {
		return f.st.Code().String()
	}
	return fmt.Sprintf("%s: %s", f.st.Code(), f.st.Message())
}

func canceled(ctxErr error) *Error {
	return &Error{Kind: KindCanceled, Code: status.FromContextError(ctxErr).Code(), Message: ctxErr.Error(), cause: ctxErr}
}

// asContextError maps a context's end to KindCanceled, keeping errors.Is
// with context.Canceled / DeadlineExceeded.
func asContextError(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return cause
	}
	return canceled(ctx.Err())
}
