package warden

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
)

const (
	// leaderMetadata carries the leader's client address on a follower's
	// Unavailable.
	leaderMetadata = "warden-leader"
	// oldestIndexMetadata carries the oldest retained index on a watch's
	// compacted error.
	oldestIndexMetadata = "warden-oldest-index"
	// startIndexMetadata: the first index a watch stream covers.
	startIndexMetadata = "warden-start-index"

	// backoffBase is the first pause after a whole round of endpoints
	// failed; it doubles each round up to Options.BackoffCap.
	backoffBase = 25 * time.Millisecond
)

// ParseEndpoint checks `host:port` (an `http://` prefix is dropped) and
// returns its canonical form. IPv6 hosts go in brackets.
func ParseEndpoint(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	s = strings.TrimPrefix(s, "http://")
	if strings.Contains(s, "://") {
		return "", fmt.Errorf("endpoint %q: only host:port (or http://host:port) is supported", raw)
	}
	s = strings.TrimRight(s, "/")
	if s == "" {
		return "", fmt.Errorf("endpoint %q: empty address; expected host:port", raw)
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", fmt.Errorf("endpoint %q: missing port; expected host:port", raw)
	}
	host, port := s[:i], s[i+1:]
	if host == "" || host == "[]" {
		return "", fmt.Errorf("endpoint %q: missing host; expected host:port", raw)
	}
	if strings.ContainsAny(host, "/?#@ ") {
		return "", fmt.Errorf("endpoint %q: the host has a character not allowed in host:port", raw)
	}
	if strings.Contains(host, ":") && !(strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")) {
		return "", fmt.Errorf("endpoint %q: an IPv6 host must be in brackets, e.g. [::1]:7001", raw)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", fmt.Errorf("endpoint %q: port %q is not a number in 1..=65535", raw, port)
	}
	return s, nil
}

// leaderHint reads the leader's address from a reply's `warden-leader`
// metadata; "" when absent or not a valid host:port (a bad hint is ignored,
// never followed).
func leaderHint(md metadata.MD) string {
	for _, v := range md.Get(leaderMetadata) {
		if ep, err := ParseEndpoint(v); err == nil {
			return ep
		}
	}
	return ""
}

func mdUint(md metadata.MD, key string) uint64 {
	for _, v := range md.Get(key) {
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			return n
		}
	}
	return 0
}

// callPlan is where the attempts of one call go, and the pauses between
// them (pure logic, no I/O).
//
// Rules: start at the cached leader (or the first endpoint); on a failure
// that names a leader, go there at once (at most len(endpoints) hops in a
// row, so two confused nodes cannot bounce a call forever; never to a node
// that failed this call without answering, e.g. a frozen ex-leader);
// otherwise move to the next endpoint at once, and after a whole round of
// endpoints failed pause 25 ms, doubling each round, capped at backoffCap.
type callPlan struct {
	endpoints       []string
	backoffCap      time.Duration
	cursor          int
	failuresInRound int
	rounds          int
	hopsInARow      int
	tried           []string
	silent          []string
}

func newCallPlan(endpoints []string, cachedLeader string, backoffCap time.Duration) (*callPlan, string) {
	p := &callPlan{endpoints: endpoints, backoffCap: backoffCap}
	first := endpoints[0]
	p.cursor = 1 % len(endpoints)
	if cachedLeader != "" {
		first = cachedLeader
		if i := slices.Index(endpoints, cachedLeader); i >= 0 {
			p.cursor = (i + 1) % len(endpoints)
		}
	}
	p.noteTried(first)
	return p, first
}

func (p *callPlan) noteTried(target string) {
	if !slices.Contains(p.tried, target) {
		p.tried = append(p.tried, target)
	}
}

// afterFailure: `failed` failed, naming `hint` as the leader ("" if not);
// `answered` when the node itself replied. Returns the pause and the next
// target.
func (p *callPlan) afterFailure(failed, hint string, answered bool) (time.Duration, string) {
	p.failuresInRound++
	if answered {
		p.silent = slices.DeleteFunc(p.silent, func(s string) bool { return s == failed })
	} else if !slices.Contains(p.silent, failed) {
		p.silent = append(p.silent, failed)
	}
	if hint != "" && hint != failed && !slices.Contains(p.silent, hint) && p.hopsInARow < len(p.endpoints) {
		p.hopsInARow++
		p.noteTried(hint)
		return 0, hint
	}
	p.hopsInARow = 0
	next := p.endpoints[p.cursor]
	p.cursor = (p.cursor + 1) % len(p.endpoints)
	if next == failed && len(p.endpoints) > 1 {
		next = p.endpoints[p.cursor]
		p.cursor = (p.cursor + 1) % len(p.endpoints)
	}
	var pause time.Duration
	if p.failuresInRound >= len(p.endpoints) {
		p.failuresInRound = 0
		pause = backoff(p.rounds, p.backoffCap)
		p.rounds++
	}
	p.noteTried(next)
	return pause, next
}

// backoff after `round` completed rounds: 25 ms doubling, at most cap.
func backoff(round int, limit time.Duration) time.Duration {
	if round > 16 {
		round = 16
	}
	return min(backoffBase<<round, limit)
}
