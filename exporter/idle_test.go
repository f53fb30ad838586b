package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestIdleConnectionsDoNotStarveScrapes: 1000 connections held open from
// loopback, each kept alive after one answer or never sending a request,
// do not keep a scrape waiting (before, 512 of them did until they timed
// out, minutes later).
func TestIdleConnectionsDoNotStarveScrapes(t *testing.T) {
	// Both ends of each connection are in this process.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur < lim.Max {
		old := lim
		lim.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
			defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
		}
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	n := min(1000, int(lim.Cur-100)/2)
	if n <= MaxConns+10 {
		t.Skipf("%d files allowed open: too few to hold more than %d connections", lim.Cur, MaxConns)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up 1\n") })
	go func() { done <- Serve(ctx, ln, h, time.Second) }()
	defer func() { cancel(); <-done }()
	addr := ln.Addr().String()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			// Kept alive after its answer, which is never read.
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 3 {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("scrape %d with %d idle connections open: %v", i, n, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "up 1\n" {
			t.Fatalf("scrape %d: %q", i, b)
		}
	}
}
