// Package gencheck holds the test that fails when clients/go/wardenpb is
// not what clients/go/gen.sh generates from crates/warden-proto/proto.
package gencheck
