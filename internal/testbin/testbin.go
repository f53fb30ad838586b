// Package testbin builds the vramtop command for tests that run it as a user
// would: once per test process, into a temporary directory that Run removes.
//
//	func TestMain(m *testing.M) { os.Exit(testbin.Run(m)) }
//
//	bin := testbin.Build(t)
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vramtop/vramtop/hostproc"
)

// cgoFlags silences the deprecation warnings of the NVML headers.
const cgoFlags = "CGO_CFLAGS=-Wno-deprecated-declarations"

var (
	running bool // set by Run: a binary built by Build will be removed

	once     sync.Once
	dir, bin string
	buildErr error
)

// Run runs the tests and then removes the binary Build made. Call it from
// TestMain: Build refuses to build without it, so no binary is left behind.
func Run(m *testing.M) int {
	running = true
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	return code
}

// Build returns the path of the vramtop command, built on the first call of
// the test process; a failed build fails every test that asks for it.
func Build(tb testing.TB) string {
	tb.Helper()
	if !running {
		tb.Fatal("testbin.Build needs TestMain to call testbin.Run")
	}
	once.Do(func() {
		dir, buildErr = os.MkdirTemp("", "vramtop-test")
		if buildErr != nil {
			return
		}
		bin = filepath.Join(dir, "vramtop")
		var out []byte
		out, buildErr = goBuild(bin)
		if buildErr != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", buildErr, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return bin
}

// BuildUnlessShort is Build for tests that `go test -short` skips.
func BuildUnlessShort(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds the vramtop binary")
	}
	return Build(tb)
}

// BuildWith builds the vramtop command into path with extra go build flags
// (-ldflags ...) and returns what the compiler printed.
func BuildWith(tb testing.TB, path string, flags ...string) string {
	tb.Helper()
	out, err := goBuild(path, flags...)
	if err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return string(out)
}

// goBuild runs go build in the module root, with the cgo flags the NVML
// headers need.
func goBuild(path string, flags ...string) ([]byte, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	args := append([]string{"build", "-o", path}, flags...)
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), cgoFlags)
	return cmd.CombinedOutput()
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not in a module")
	}
	return filepath.Dir(gomod), nil
}

// Sleeper starts a process that sleeps until signalled (killed when the test
// ends) and returns it with what /proc says of it, which the test fails
// without: visible, its start time and UID read.
func Sleeper(t *testing.T) (*exec.Cmd, hostproc.ProcInfo) {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	info := hostproc.NewProcReader("").Lookup(uint32(c.Process.Pid))
	if !info.Visible || info.StartTime.IsZero() || !info.HasUID {
		t.Fatalf("the child's /proc entry: %+v", info)
	}
	return c, info
}
