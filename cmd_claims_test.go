package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/internal/testbin"
	"github.com/vramtop/vramtop/sampler"
)

// endHolders ends the holders of the claims in dir, which tests started.
func endHolders(dir string) {
	s, err := claims.Open(dir)
	if err != nil {
		return
	}
	act, _ := s.Active()
	for _, c := range act {
		if c.PID > 0 && c.PID != os.Getpid() {
			syscall.Kill(c.PID, syscall.SIGTERM)
		}
	}
}

// freshClaims gives the test a claims directory of its own and ends the
// holders its picks left when it ends.
func freshClaims(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "claims")
	t.Setenv(claims.EnvDir, dir)
	t.Cleanup(func() { endHolders(dir) })
	return dir
}

func activeClaims(t *testing.T, dir string) map[string]claims.Claim {
	t.Helper()
	s, err := claims.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	act, warns := s.Active()
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	return act
}

// Two picks in a row get different GPUs: the first is claimed by a holder
// that outlives the pick; killing the holder frees the GPU at once.
func TestPickClaimsWhatItPrints(t *testing.T) {
	dir := freshClaims(t)
	first, errOut, code := runPickArgs("--demo", "--min-free", "1GiB", "--claim-ttl", "1m")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	second, errOut, code := runPickArgs("--demo", "--min-free", "1GiB", "--claim-ttl", "1m")
	if code != 0 || errOut != "" || second == first {
		t.Fatalf("second pick %q (exit %d, %q), the first %q: want another GPU", second, code, errOut, first)
	}
	act := activeClaims(t, dir)
	if len(act) != 2 {
		t.Fatalf("claims %+v, want two", act)
	}
	var holder int
	for _, c := range act {
		if c.PID == os.Getpid() || c.PID <= 0 || c.Bytes != 1<<30 || c.User != currentUser() || c.Until.Before(time.Now().Add(50*time.Second)) {
			t.Errorf("claim %+v: want a holder's PID, 1 GiB, this user, until a minute from now", c)
		}
		if strings.HasPrefix(first, demoIndexOf(t, c.UUID)) {
			holder = c.PID
		}
	}
	if holder == 0 {
		t.Fatalf("no claim for the first pick %q in %+v", first, act)
	}
	syscall.Kill(holder, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for len(activeClaims(t, dir)) != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the holder is not our child: it is gone when the kernel says so
	}
	if third, _, _ := runPickArgs("--demo", "--min-free", "1GiB", "--no-claim"); third != first {
		t.Errorf("after the holder of %q was killed, pick gave %q", first, third)
	}
	// With every GPU claimed, pick fails and says by whom.
	for range 5 {
		runPickArgs("--demo", "--claim-ttl", "1m")
	}
	out, errOut, code := runPickArgs("--demo")
	if code != 1 || out != "" || !strings.Contains(errOut, "claimed by "+currentUser()+" (PID ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("all claimed: exit %d, %q, %q", code, out, errOut)
	}
}

// demoIndexOf is the CUDA_VISIBLE_DEVICES value of the demo device uuid.
func demoIndexOf(t *testing.T, uuid string) string {
	s, err := sampler.New(newDemo(), sampler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range s.Once().Devices {
		if d.UUID == uuid {
			if d.MIG != nil {
				return d.UUID
			}
			return strconv.Itoa(d.Index)
		}
	}
	return "?"
}

// pick -- CMD runs CMD on the GPU it picked, by UUID with --uuid, holds
// the claim while it runs, and exits with its status.
func TestPickRunsTheCommand(t *testing.T) {
	dir := freshClaims(t)
	seen := filepath.Join(t.TempDir(), "seen")
	script := fmt.Sprintf(`echo "$CUDA_VISIBLE_DEVICES" > %s; ls %s | wc -l >> %s; exit 7`, seen, dir, seen)
	out, errOut, code := runPickArgs("--demo", "--uuid", "--", "sh", "-c", script)
	if code != 7 || out != "" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the command's 7 and nothing else", code, out, errOut)
	}
	b, _ := os.ReadFile(seen)
	lines := strings.Fields(string(b))
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "GPU-") || lines[1] != "1" {
		t.Fatalf("the command saw %q: want CUDA_VISIBLE_DEVICES=GPU-... and one claim file", b)
	}
	if act := activeClaims(t, dir); len(act) != 0 {
		t.Errorf("claims held after the command ended: %+v", act)
	}
	// --report json: run's report after it.
	_, errOut, code = runPickArgs("--demo", "--report", "json", "--", "true")
	if code != 0 || !strings.Contains(errOut, `"exit_code": 0`) {
		t.Errorf("--report json: exit %d, stderr %q", code, errOut)
	}
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"--demo", "--"}, "name the command to run after --"},
		{[]string{"--demo", "--claim-ttl", "0s"}, "--claim-ttl 0s: want a positive duration"},
		{[]string{"--demo", "--report", "xml", "--", "true"}, `--report "xml": want text or json`},
		{[]string{"--demo", "--report-file", "r", "--", "true"}, "--report-file needs --report"},
		{[]string{"--demo", "python"}, `unexpected argument "python" (a command to run goes after --)`},
	} {
		out, errOut, code := runPickArgs(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.say) {
			t.Errorf("%v: exit %d, %q, %q; want 2 and one line with %q", c.args, code, out, errOut, c.say)
		}
	}
}

// Eight waiters at once on the demo's GPUs, each running a command on the
// GPU it got: no GPU is handed to two while one holds it, and they all
// get one in the end.
func TestEightWaitersNeverShareAGPU(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	dir := freshClaims(t)
	marks := t.TempDir()
	// mkdir fails when the GPU's directory exists: another command is on it.
	script := fmt.Sprintf(`d=%s/"$CUDA_VISIBLE_DEVICES"; mkdir "$d" || { echo TWICE; exit 9; }; echo "$CUDA_VISIBLE_DEVICES" >> %s/log; sleep 0.4; rmdir "$d"`, marks, marks)
	var wg sync.WaitGroup
	results := make([]string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "wait", "--demo", "--min-free", "1MiB", "--settle", "0", "--interval", "100ms", "--timeout", "60s", "--", "sh", "-c", script)
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), claims.EnvDir+"="+dir)
			var o bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &o
			err := cmd.Run()
			results[i] = fmt.Sprintf("exit %d (%v): %q", cmd.ProcessState.ExitCode(), err, o.String())
		}()
	}
	wg.Wait()
	for i, r := range results {
		if !strings.HasPrefix(r, "exit 0 ") || strings.Contains(r, "TWICE") {
			t.Errorf("waiter %d: %s", i, r)
		}
	}
	log, _ := os.ReadFile(filepath.Join(marks, "log"))
	used := map[string]int{}
	for _, g := range strings.Fields(string(log)) {
		used[g]++
	}
	if strings.Count(string(log), "\n") != 8 || len(used) < 2 {
		t.Errorf("the commands ran on %q", log)
	}
	if act := activeClaims(t, dir); len(act) != 0 {
		t.Errorf("claims left: %+v", act)
	}
}

// A waiter killed while its command runs releases its claim at once.
func TestKilledWaiterReleasesItsClaim(t *testing.T) {
	bin := testbin.BuildUnlessShort(t)
	dir := freshClaims(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(bin, "wait", "--demo", "--settle", "0", "--interval", "100ms", "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 30")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), claims.EnvDir+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL) // the orphaned sleep
			}
		}
	}()
	// The command runs once it has written its PID: only then. The claim
	// shows before (it is taken first), but then the waiter may still be
	// describing it (the lock is taken before the description is written)
	// or starting the command, and a process being started holds a copy of
	// every descriptor of its parent, the claim's among them, until it has
	// executed the command (close-on-exec): killed in that instant, the
	// waiter's claim outlives it by as long.
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(pidFile); strings.HasSuffix(string(b), "\n") {
			break
		}
	}
	act := activeClaims(t, dir)
	if len(act) != 1 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no claim while the command runs: %+v", act)
	}
	for _, c := range act {
		if c.PID != cmd.Process.Pid || !c.Until.IsZero() || !strings.Contains(c.Command, "sleep 30") {
			t.Errorf("claim %+v: want the waiter's PID, no end, the command", c)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if act := activeClaims(t, dir); len(act) != 0 {
		t.Errorf("the killed waiter's claim is still held: %+v", act)
	}
}

// The holder lets a claim go when the job shows up on the GPU: a process
// that was not there, or the memory claimed.
func TestHolderSeesTheJobArrive(t *testing.T) {
	g := holderGPU{UUID: "GPU-a", PIDs: []uint32{10}, Used: 10 * gib, Bytes: 40 * gib}
	snap := func(used uint64, pids ...uint32) sampler.Snapshot {
		d := sampler.Device{UUID: "GPU-a", MemoryUsed: used}
		for _, p := range pids {
			d.Processes = append(d.Processes, sampler.Process{PID: p})
		}
		return sampler.Snapshot{Devices: []sampler.Device{d, {UUID: "GPU-b", Processes: []sampler.Process{{PID: 99}}}}}
	}
	for _, c := range []struct {
		s    sampler.Snapshot
		want bool
	}{
		{snap(10*gib, 10), false},
		{snap(25*gib, 10), false},
		{snap(11*gib, 10, 11), true},
		{snap(30*gib, 10), true},
	} {
		if got := arrived(g, c.s); got != c.want {
			t.Errorf("%+v: arrived %v, want %v", c.s.Devices[0], got, c.want)
		}
	}
}

// The claim files pick writes match docs/schema/claim.schema.json.
func TestClaimFileMatchesSchema(t *testing.T) {
	dir := freshClaims(t)
	s := schema(t, "claim.schema.json")
	runPickArgs("--demo", "--min-free", "1GiB", "--claim-ttl", "30s")
	runPickArgs("--demo", "--", "sh", "-c", "cat "+dir+"/*.claim > "+dir+"/copy")
	files, _ := filepath.Glob(filepath.Join(dir, "*.claim"))
	if len(files) != 2 {
		t.Fatalf("claim files %q, want two", files)
	}
	copied, _ := os.ReadFile(filepath.Join(dir, "copy"))
	lines := strings.Split(strings.TrimSpace(string(copied)), "\n")
	if len(lines) != 2 {
		t.Fatalf("while the command ran, the claim files held %q", copied)
	}
	for _, l := range lines {
		validate(t, s, "a claim file", []byte(l))
	}
}

// The live view learns of a claim from the claims directory.
func TestLiveViewReadsClaims(t *testing.T) {
	dir := freshClaims(t)
	runPickArgs("--demo", "--min-free", "2GiB", "--claim-ttl", "1m")
	act := activeClaims(t, dir)
	if len(act) != 1 {
		t.Fatalf("claims %+v", act)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claim := watchClaims(ctx)
	for uuid := range act {
		if got := claim(sampler.Device{ID: "0", UUID: uuid}); !strings.HasPrefix(got, currentUser()+", 2 GiB, until ") {
			t.Errorf("the live view says %q of the claimed GPU", got)
		}
	}
	if got := claim(sampler.Device{ID: "1", UUID: "GPU-unclaimed"}); got != "" {
		t.Errorf("an unclaimed GPU: %q", got)
	}
}

// The claim of $(vramtop pick) ends by itself after --claim-ttl.
func TestClaimEndsAfterItsTTL(t *testing.T) {
	dir := freshClaims(t)
	if _, errOut, code := runPickArgs("--demo", "--claim-ttl", "500ms"); code != 0 {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if act := activeClaims(t, dir); len(act) != 1 {
		t.Fatalf("claims right after the pick: %+v", act)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(activeClaims(t, dir)) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if act := activeClaims(t, dir); len(act) != 0 {
		t.Errorf("claims 10 s after a 500 ms TTL: %+v", act)
	}
}
