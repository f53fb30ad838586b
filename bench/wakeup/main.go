// Command wakeup prints what one wake-up of an idle program costs in CPU: a
// Go ticker's tick (at GOMAXPROCS 1 and 2, alone and handing the tick to a
// second goroutine, as the sampler does), against a C program's nanosleep
// when the C compiler is found. Every tick of the live view pays this on top
// of its own work.
//
//	go run ./bench/wakeup [-every 10ms] [-for 20s]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vramtop/vramtop/internal/cputime"
)

// ticks ticks every d for total, in this process, and returns the CPU per
// tick in µs.
func ticks(d, total time.Duration, handoff bool) float64 {
	work := make(chan struct{})
	done := make(chan struct{})
	go func() {
		for range work {
			done <- struct{}{}
		}
	}()
	defer close(work)
	t := time.NewTicker(d)
	defer t.Stop()
	c0, n := cputime.Now(), 0
	for end := time.Now().Add(total); time.Now().Before(end); n++ {
		<-t.C
		if handoff {
			work <- struct{}{}
			<-done
		}
	}
	return float64(cputime.Now()-c0) / float64(n) / 1e3
}

const cProgram = `#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
int main(int argc, char **argv) {
	long ns = atol(argv[1]); long n = atol(argv[2]);
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	struct rusage a, b;
	getrusage(RUSAGE_SELF, &a);
	for (long i = 0; i < n; i++) nanosleep(&ts, 0);
	getrusage(RUSAGE_SELF, &b);
	double us = (b.ru_utime.tv_sec - a.ru_utime.tv_sec) * 1e6 + (b.ru_utime.tv_usec - a.ru_utime.tv_usec)
		+ (b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1e6 + (b.ru_stime.tv_usec - a.ru_stime.tv_usec);
	printf("%.1f\n", us / n);
	return 0;
}
`

// cTicks runs the C program, or returns "" when no compiler is found.
func cTicks(d, total time.Duration) string {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return ""
	}
	dir, err := os.MkdirTemp("", "wakeup")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(dir)
	src, bin := filepath.Join(dir, "w.c"), filepath.Join(dir, "w")
	if os.WriteFile(src, []byte(cProgram), 0o644) != nil || exec.Command(cc, "-O2", "-o", bin, src).Run() != nil {
		return ""
	}
	out, err := exec.Command(bin, strconv.FormatInt(d.Nanoseconds(), 10), strconv.FormatInt(int64(total/d), 10)).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func main() {
	every := flag.Duration("every", 10*time.Millisecond, "tick interval")
	total := flag.Duration("for", 20*time.Second, "how long each row ticks")
	flag.Parse()
	fmt.Printf("CPU per wake-up, µs (a tick every %v for %v; %d CPUs)\n", *every, *total, runtime.NumCPU())
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		fmt.Printf("  Go ticker, GOMAXPROCS=%d              %7.1f\n", procs, ticks(*every, *total, false))
		fmt.Printf("  Go ticker, GOMAXPROCS=%d, handed on   %7.1f\n", procs, ticks(*every, *total, true))
	}
	if c := cTicks(*every, *total); c != "" {
		fmt.Printf("  C nanosleep                          %7s\n", c)
	}
}
