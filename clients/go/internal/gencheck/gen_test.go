package gencheck

import (
	"os/exec"
	"testing"
)

// The generated code is committed: it must be exactly what protoc and the
// pinned plugins make of the current .proto files, so a changed .proto
// cannot ship with stale Go stubs (CI also runs `gen.sh --check` itself,
// which fails when protoc is missing).
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc is not installed (Debian: apt-get install protobuf-compiler); clients/go/ci.sh runs gen.sh --check and installs it")
	}
	out, err := exec.Command("bash", "../../gen.sh", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("gen.sh --check: %v\n%s", err, out)
	}
}
