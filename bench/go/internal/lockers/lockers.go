// Package lockers is one interface, Client, and an implementation per
// system, each through the client library that system's users run:
//
//	| backend               | client                                   | acquire                                   | release                  |
//	|-----------------------|------------------------------------------|-------------------------------------------|--------------------------|
//	| etcd-go-concurrency   | go.etcd.io/etcd/client/v3 + concurrency  | NewMutex(session, resource).Lock          | Mutex.Unlock             |
//	| warden-go             | clients/go/warden, mutual TLS as root    | Session.Lock(resource) (server FIFO queue) | Guard.Release            |
//	| warden-go-insecure    | clients/go/warden, plaintext             | as warden-go                              | as warden-go             |
//	| warden-go-scraped     | as warden-go                             | as warden-go                              | as warden-go             |
//	| warden-go-before      | as warden-go                             | as warden-go                              | as warden-go             |
//
// The last two differ from warden-go in the servers only: gobench reads
// every node's /metrics each second while a warden-go-scraped workload runs
// (internal/scrape), and starts warden-go-before's cluster from another
// build (--warden-bin-before).
//
// A Client is one connection and one session (a lease with a 10 s TTL kept
// alive in the background by the library, etcd's and Warden's alike), made
// before the timed part of a workload; every lock it takes is on that
// session. That is the shape of loadgen's `etcd-session` backend
// (bench/src/backend.rs), here for both systems.
package lockers

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/warden-locks/warden/clients/go/warden"
)

// TTL of every session, as bench/src/backend.rs's TTL_S.
const TTL = 10 * time.Second

// Held is one granted lock.
type Held interface {
	// Release gives the lock up.
	Release(ctx context.Context) error
}

// Client is one client of one lock service: its own connection and session.
type Client interface {
	// Lock waits (in the system's queue) until resource is granted or ctx ends.
	Lock(ctx context.Context, resource string) (Held, error)
	// Close ends the session (its locks with it) and the connection.
	Close(ctx context.Context) error
}

// Target names a backend and how to reach it.
type Target struct {
	// Backend: etcd-go-concurrency, or warden-go and its variants
	// (warden-go-insecure, warden-go-scraped, warden-go-before): every
	// backend named warden-go* is a Warden client, told apart by its
	// cluster (the client needs only CertsDir).
	Backend   string
	Endpoints []string
	// CertsDir: Warden on TLS, the dir with ca.crt and client.root.crt/.key.
	CertsDir string
}

// Connect opens a new client (its own connection and session).
func (t Target) Connect(ctx context.Context) (Client, error) {
	switch {
	case t.Backend == "etcd-go-concurrency":
		return connectEtcd(t.Endpoints)
	case strings.HasPrefix(t.Backend, "warden-go"):
		return connectWarden(ctx, t.Endpoints, t.CertsDir)
	default:
		return nil, fmt.Errorf("unknown backend %q", t.Backend)
	}
}

// ---------------------------------------------------------------- etcd

type etcdClient struct {
	cli     *clientv3.Client
	session *concurrency.Session
}

// EtcdConfig is the client configuration every etcd client here uses.
func EtcdConfig(ctx context.Context, endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Context:     ctx,
		Logger:      zap.NewNop(),
	}
}

// connectEtcd makes a client and its session: a lease granted now and kept
// alive by the client library until Close (its context is the session's
// lifetime, so it is not the caller's).
func connectEtcd(endpoints []string) (*etcdClient, error) {
	cli, err := clientv3.New(EtcdConfig(context.Background(), endpoints))
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	session, err := concurrency.NewSession(cli, concurrency.WithTTL(int(TTL/time.Second)))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd session: %w", err)
	}
	return &etcdClient{cli: cli, session: session}, nil
}

type etcdHeld struct {
	m *concurrency.Mutex
}

func (e *etcdClient) Lock(ctx context.Context, resource string) (Held, error) {
	// The mutex's keys are resource/<lease id>, as etcd's own Lock service
	// names them for loadgen's etcd backends.
	m := concurrency.NewMutex(e.session, resource)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return etcdHeld{m: m}, nil
}

func (h etcdHeld) Release(ctx context.Context) error { return h.m.Unlock(ctx) }

func (e *etcdClient) Close(ctx context.Context) error {
	err := e.session.Close()
	if cerr := e.cli.Close(); err == nil {
		err = cerr
	}
	return err
}

// ---------------------------------------------------------------- Warden

type wardenClient struct {
	c       *warden.Client
	session *warden.Session
}

// WardenOptions are the client options every Warden client here uses:
// mutual TLS as root when certsDir is set, plaintext otherwise.
func WardenOptions(certsDir string) warden.Options {
	opts := warden.Options{}
	if certsDir != "" {
		opts.TLS = &warden.TLSOptions{CertsDir: certsDir, User: "root"}
	}
	return opts
}

func connectWarden(ctx context.Context, endpoints []string, certsDir string) (*wardenClient, error) {
	c, err := warden.New(endpoints, WardenOptions(certsDir))
	if err != nil {
		return nil, fmt.Errorf("warden client: %w", err)
	}
	session, err := c.Session(ctx, TTL)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("warden session: %w", err)
	}
	return &wardenClient{c: c, session: session}, nil
}

type wardenHeld struct {
	g *warden.Guard
}

func (w *wardenClient) Lock(ctx context.Context, resource string) (Held, error) {
	g, err := w.session.Lock(ctx, resource)
	if err != nil {
		return nil, err
	}
	return wardenHeld{g: g}, nil
}

func (h wardenHeld) Release(ctx context.Context) error { return h.g.Release(ctx) }

func (w *wardenClient) Close(ctx context.Context) error {
	err := w.session.Close(ctx)
	if cerr := w.c.Close(); err == nil {
		err = cerr
	}
	return err
}
