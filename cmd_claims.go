package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/vramtop/vramtop/advisor"
	"github.com/vramtop/vramtop/claims"
	"github.com/vramtop/vramtop/nvmlsource"
	"github.com/vramtop/vramtop/sampler"
)

// defaultClaimTTL is how long the claim of $(vramtop wait) lasts at most.
const defaultClaimTTL = 2 * time.Minute

// claimFlags are the flags pick and wait share for claiming and for the
// command they start: --claim-ttl, --uuid, --report, --report-file.
type claimFlags struct {
	ttl        time.Duration
	uuid       bool
	report     string
	reportFile string
	noClaim    bool
}

func (c *claimFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&c.ttl, "claim-ttl", defaultClaimTTL, "without a command: the claim on the GPUs printed lasts until a new process shows up on each, or for this `duration` at most")
	fs.BoolVar(&c.noClaim, "no-claim", false, "do not claim the GPUs handed out (those others claimed are still skipped)")
	fs.BoolVar(&c.uuid, "uuid", false, "name the GPUs by UUID (GPU-...), in the output and in CUDA_VISIBLE_DEVICES")
	fs.StringVar(&c.report, "report", "", "with a command: when it ends, print vramtop run's report of it, as text or json")
	fs.StringVar(&c.reportFile, "report-file", "", "with --report: write the report to `FILE` instead of stderr")
}

// valid checks the flags, printing why not after name.
func (c *claimFlags) valid(name string, stderr io.Writer) bool {
	switch {
	case c.ttl <= 0:
		fmt.Fprintf(stderr, "%s: --claim-ttl %v: want a positive duration\n", name, c.ttl)
		return false
	case c.report != "" && c.report != "text" && c.report != "json":
		fmt.Fprintf(stderr, "%s: --report %q: want text or json\n", name, c.report)
		return false
	case c.reportFile != "" && c.report == "":
		fmt.Fprintf(stderr, "%s: --report-file needs --report text or --report json\n", name)
		return false
	}
	return true
}

// commandArgs returns the command after "--" (nil when none), or prints
// why the arguments are wrong and returns ok false.
func commandArgs(fs *pflag.FlagSet, stderr io.Writer) (argv []string, ok bool) {
	dash := fs.ArgsLenAtDash()
	if dash < 0 && fs.NArg() > 0 || dash > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q (a command to run goes after --)\n", fs.Name(), fs.Arg(0))
		return nil, false
	}
	if dash == 0 && fs.NArg() == 0 {
		fmt.Fprintf(stderr, "%s: name the command to run after --\n", fs.Name())
		return nil, false
	}
	if dash < 0 {
		return nil, true
	}
	return fs.Args(), true
}

// claimer reads the claims of others and takes them for this process.
type claimer struct {
	name   string
	store  *claims.Store // nil: claims cannot be used here (said once)
	stderr io.Writer
	base   claims.Claim // user, size and command of the claims taken
	warned map[string]bool
	active map[string]claims.Claim
	// noClaim: read the claims of others, take none.
	noClaim bool
}

func newClaimer(name string, bytes uint64, argv []string, noClaim bool, stderr io.Writer) *claimer {
	c := &claimer{name: name, stderr: stderr, warned: map[string]bool{}, noClaim: noClaim}
	c.base = claims.Claim{User: currentUser(), PID: os.Getpid(), Bytes: bytes, Command: strings.Join(argv, " ")}
	s, err := claims.Open(claims.Dir())
	if err != nil {
		fmt.Fprintf(stderr, "%s: GPUs are not claimed: %v\n", name, err)
		return c
	}
	c.store = s
	return c
}

// refresh reads who claims what now; a file that is no claim is said once.
func (c *claimer) refresh() {
	if c.store == nil {
		return
	}
	var warns []string
	c.active, warns = c.store.Active()
	for _, w := range warns {
		if !c.warned[w] {
			c.warned[w] = true
			fmt.Fprintf(c.stderr, "%s: %s\n", c.name, w)
		}
	}
}

// claimOf returns the claim on d, if one is held.
func (c *claimer) claimOf(d *sampler.Device) (claims.Claim, bool) {
	if d.UUID == "" || c.active == nil {
		return claims.Claim{}, false
	}
	cl, ok := c.active[d.UUID]
	return cl, ok
}

// unclaimed is snap without the devices claimed, and a few words on them.
func (c *claimer) unclaimed(snap sampler.Snapshot) (sampler.Snapshot, string) {
	out := snap
	out.Devices = make([]sampler.Device, 0, len(snap.Devices))
	var said []string
	for i := range snap.Devices {
		d := &snap.Devices[i]
		if cl, ok := c.claimOf(d); ok {
			said = append(said, fmt.Sprintf("%s claimed by %s", deviceLabel(d), cl.Describe(advisor.FormatBytes)))
			continue
		}
		out.Devices = append(out.Devices, *d)
	}
	return out, strings.Join(said, "; ")
}

func deviceLabel(d *sampler.Device) string {
	if d.MIG != nil {
		return fmt.Sprintf("GPU %d MIG %d", d.MIG.ParentIndex, d.MIG.GPUInstanceID)
	}
	return fmt.Sprintf("GPU %d", d.Index)
}

// take claims the devices of picks (of snap), all or none: false when
// another process holds one of them (it is then skipped until its claim
// ends). until is recorded as the claim's end (zero: while the command
// runs). Devices without a UUID cannot be claimed and are taken as they
// are.
func (c *claimer) take(snap sampler.Snapshot, picks []advisor.Pick, until time.Time) ([]*claims.Held, bool) {
	if c.store == nil || c.noClaim {
		return nil, true
	}
	var held []*claims.Held
	for _, p := range picks {
		d := deviceByID(snap, p.DeviceID)
		if d == nil || d.UUID == "" {
			continue
		}
		cl := c.base
		cl.UUID, cl.Time, cl.Until = d.UUID, time.Now(), until
		h, err := c.store.TryClaim(cl)
		if err != nil {
			if !errors.Is(err, claims.ErrClaimed) {
				fmt.Fprintf(c.stderr, "%s: %v\n", c.name, err)
			}
			for _, h := range held {
				h.Release()
			}
			if c.active == nil {
				c.active = map[string]claims.Claim{}
			}
			c.active[d.UUID] = claims.Claim{UUID: d.UUID} // taken meanwhile
			return nil, false
		}
		held = append(held, h)
	}
	return held, true
}

func deviceByID(snap sampler.Snapshot, id string) *sampler.Device {
	for i := range snap.Devices {
		if snap.Devices[i].ID == id {
			return &snap.Devices[i]
		}
	}
	return nil
}

// byUUID names picks by their devices' UUIDs where known.
func byUUID(snap sampler.Snapshot, picks []advisor.Pick) {
	for i := range picks {
		if d := deviceByID(snap, picks[i].DeviceID); d != nil && d.UUID != "" {
			picks[i].Value = d.UUID
		}
	}
}

func releaseAll(held []*claims.Held) {
	for _, h := range held {
		h.Release()
	}
}

// handOut ends pick and wait once held are claimed: with a command, it
// runs it on the GPUs (CUDA_VISIBLE_DEVICES) and releases the claims when
// it ends, returning its exit status; without one, it prints the GPUs and
// leaves the claims to a holder process (startHolder).
func handOut(ctx context.Context, name string, sf sourceFlags, cf claimFlags, asJSON bool, argv []string, snap sampler.Snapshot, picks []advisor.Pick, held []*claims.Held, stdout, stderr io.Writer) int {
	value := advisor.JoinPicks(picks)
	if argv == nil {
		if err := startHolder(sf, cf.ttl, snap, held); err != nil {
			fmt.Fprintf(stderr, "%s: the claim ends now: %v\n", name, err)
		}
		releaseAll(held)
		if !writeOutput(stdout, stderr, name, func(w io.Writer) error {
			if asJSON {
				return writePickJSON(w, localPicks(snap, picks), "")
			}
			_, err := fmt.Fprintln(w, value)
			return err
		}) {
			return 1
		}
		return 0
	}
	defer releaseAll(held)
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=")
	}), "CUDA_VISIBLE_DEVICES="+value)
	if sf.interval <= 0 {
		sf.interval = jobInterval
	}
	if sf.history <= 0 {
		sf.history = sampler.DefaultHistory
	}
	return runJob(ctx, name, jobSpec{sf: sf, argv: argv, env: env, reportFmt: cf.report, reportFile: cf.reportFile}, stdout, stderr)
}

// The holder: $(vramtop wait) ends as soon as it has printed the GPUs, and
// a claim must outlive it until the job it printed them for has its memory
// on the card. So vramtop starts itself again, detached (its own session,
// no terminal, stdin and stdout on /dev/null so that $(...) does not wait
// for it), handing it the locked files: a lock belongs to the open file,
// not the process, so the holder keeps the claims when vramtop exits. The
// holder samples the GPUs and drops each claim as soon as a process that
// was not there at the claim shows up on its GPU (or its used memory has
// grown by half the size claimed), and all of them after --claim-ttl; it
// is a process like any other, so killing it releases them at once.

// holderEnv names the variable that makes vramtop the holder; its value
// is a holderSpec in JSON.
const holderEnv = "VRAMTOP_CLAIM_HOLDER"

type holderSpec struct {
	Until    time.Time     `json:"until"`
	Demo     bool          `json:"demo,omitempty"`
	Interval time.Duration `json:"interval"`
	GPUs     []holderGPU   `json:"gpus"`
}

// holderGPU is one claimed GPU: the processes and used memory it had when
// it was claimed. Its locked file is descriptor 3+i.
type holderGPU struct {
	UUID  string   `json:"uuid"`
	PIDs  []uint32 `json:"pids"`
	Used  uint64   `json:"used"`
	Bytes uint64   `json:"bytes"`
}

// startHolder starts the holder of held, claimed from snap.
func startHolder(sf sourceFlags, ttl time.Duration, snap sampler.Snapshot, held []*claims.Held) error {
	if len(held) == 0 {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	spec := holderSpec{Until: time.Now().Add(ttl), Demo: snap.Demo, Interval: time.Second}
	var files []*os.File
	for _, h := range held {
		g := holderGPU{UUID: h.UUID, Bytes: h.Bytes}
		for i := range snap.Devices {
			d := &snap.Devices[i]
			if d.UUID != h.UUID {
				continue
			}
			g.Used = d.MemoryUsed
			for _, p := range d.Processes {
				g.PIDs = append(g.PIDs, p.PID)
			}
		}
		spec.GPUs = append(spec.GPUs, g)
		files = append(files, h.File())
	}
	b, _ := json.Marshal(spec)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), holderEnv+"="+string(b))
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	for _, h := range held {
		c := h.Claim
		c.PID, c.Until = cmd.Process.Pid, spec.Until
		h.Rewrite(c)
	}
	return cmd.Process.Release()
}

// holderMain is vramtop as the holder (see startHolder); ok is false when
// the environment does not ask for one.
func holderMain() (code int, ok bool) {
	raw, ok := os.LookupEnv(holderEnv)
	if !ok {
		return 0, false
	}
	os.Unsetenv(holderEnv)
	var spec holderSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil || len(spec.GPUs) == 0 || len(spec.GPUs) > 64 {
		return 2, true
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT)
	files := make([]*os.File, len(spec.GPUs))
	for i := range files {
		files[i] = os.NewFile(uintptr(3+i), "claim")
	}
	ctx, cancel := context.WithDeadline(context.Background(), spec.Until)
	defer cancel()
	left := len(files)
	var src sampler.Source
	var err error
	if spec.Demo {
		src = newDemo()
	} else {
		src, err = nvmlsource.Open()
	}
	if err != nil {
		<-ctx.Done() // the TTL alone ends the claims
		return 0, true
	}
	s, err := sampler.New(src, sampler.Config{Interval: max(spec.Interval, 100*time.Millisecond), History: time.Minute})
	if err != nil {
		src.Close()
		<-ctx.Done()
		return 0, true
	}
	snaps := s.Subscribe()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for left > 0 {
		select {
		case <-ctx.Done():
			<-done
			return 0, true
		case snap := <-snaps:
			for i, g := range spec.GPUs {
				if files[i] != nil && arrived(g, snap) {
					files[i].Close()
					files[i] = nil
					left--
				}
			}
		}
	}
	cancel()
	<-done
	return 0, true
}

// arrived reports whether the job a claim was for shows on its GPU in
// snap: a process that was not there when it was claimed, or used memory
// grown by half the size claimed.
func arrived(g holderGPU, snap sampler.Snapshot) bool {
	for i := range snap.Devices {
		d := &snap.Devices[i]
		if d.UUID != g.UUID {
			continue
		}
		for _, p := range d.Processes {
			if !p.Exited && !slices.Contains(g.PIDs, p.PID) {
				return true
			}
		}
		return g.Bytes > 0 && d.MemoryUsed >= g.Used+g.Bytes/2
	}
	return false
}

// claimsRefresh is how often the live view reads the claims.
const claimsRefresh = 2 * time.Second

// watchClaims reads the claims now and every claimsRefresh until ctx
// ends, and returns what the live view asks of them (ui.Options.Claim):
// who claimed a GPU (by its UUID), or "". Reading is off the drawing
// path; nil when there is no claims directory.
func watchClaims(ctx context.Context) func(d sampler.Device) string {
	s, err := claims.Open(claims.Dir())
	if err != nil {
		return nil
	}
	w := claims.Watch(ctx, s, claimsRefresh)
	return func(d sampler.Device) string {
		if d.UUID == "" {
			return ""
		}
		act, _ := w.Claims()
		c, ok := act[d.UUID]
		if !ok {
			return ""
		}
		return c.Short(advisor.FormatBytes)
	}
}
