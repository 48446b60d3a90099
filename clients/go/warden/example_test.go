package warden_test

import (
	"context"
	"log"
	"os"
	"strings"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// writeOrders stands for the protected write: the store keeps the highest
// fencing token it has accepted and refuses a lower one, in the write's own
// transaction (e.g. `UPDATE ... WHERE fence < $token`).
func writeOrders(ctx context.Context, fencingToken uint64, order string) error { return nil }

// A session, a lock on it, a check right before the protected write, and
// the fencing token passed with the write.
func Example() {
	ctx := context.Background()
	// What `warden dev` prints: export WARDEN_ENDPOINTS=... WARDEN_CERTS_DIR=...
	opts := warden.Options{}
	if dir := os.Getenv("WARDEN_CERTS_DIR"); dir != "" {
		opts.TLS = &warden.TLSOptions{CertsDir: dir, User: "root"}
	}
	client, err := warden.New(strings.Split(os.Getenv("WARDEN_ENDPOINTS"), ","), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	session, err := client.Session(ctx, 10*time.Second) // renewed every TTL/3
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close(ctx)                 // revokes the lease: releases its locks
	lock, err := session.Lock(ctx, "orders") // waits in the server's FIFO queue
	if err != nil {
		log.Fatal(err)
	}
	if err := lock.Check(); err != nil { // is the lease certainly still ours?
		log.Fatal(err)
	}
	if err := writeOrders(ctx, lock.FencingToken(), "order-42"); err != nil {
		log.Fatal(err) // the store refused an older token: we lost the lock
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}
}

// Leader election on a session: the term's token stamps the leader's work.
func ExampleElection() {
	ctx := context.Background()
	client, _ := warden.New([]string{"127.0.0.1:7001"}, warden.Options{})
	session, _ := client.Session(ctx, 5*time.Second)
	election := warden.NewElection(session, "scheduler")
	leadership, err := election.Campaign(ctx, "node-a") // waits until elected
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-leadership.Done(): // lost: stop acting as the leader at once
	default:
		_ = writeOrders(ctx, leadership.FencingToken(), "scheduled")
	}
	_ = leadership.Resign(ctx)
}
