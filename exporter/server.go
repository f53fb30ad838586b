package exporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Handler serves /metrics (the collector's page, encoded once per snapshot
// and the same bytes for every scraper), /healthz (200 while a recent,
// successful sample exists, 503 otherwise) and a short index at /.
func Handler(c *Collector) http.Handler {
	mux := http.NewServeMux()
	pool := sync.Pool{New: func() any { return new([]byte) }}
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		bp := pool.Get().(*[]byte)
		*bp = c.Page((*bp)[:0])
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(*bp)
		pool.Put(bp)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ok, why := c.Healthy()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>vramtop exporter</title></head><body><h1>vramtop exporter</h1>`+
			`<p><a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a></p></body></html>`)
	})
	return mux
}

// MaxConns is how many connections the exporter serves at once. A new one
// past that closes the connection idle the longest (kept alive after its
// answer, or yet to send its request), so that idle connections, however
// many a client holds open, never keep a scrape waiting; with none idle it
// waits until one closes.
const MaxConns = 512

// Server timeouts: a client gets this long to send its request headers, a
// whole request and answer may take WriteTimeout, and an idle keep-alive
// connection is closed after IdleTimeout.
const (
	ReadHeaderTimeout = 5 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// Listen opens addr, with an error message a user can act on when the
// address is taken.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, errAddrInUse) {
			return nil, fmt.Errorf("cannot listen on %s: the address is already in use (another exporter? pick one with --listen)", addr)
		}
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve serves h on ln, at most MaxConns connections at a time, until ctx
// ends. Then it stops accepting, gives requests in flight up to grace to
// finish and closes whatever is left (idle, half-open or stuck
// connections): a client that never finishes its request does not turn a
// clean stop into an error.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration) error {
	lln := limitListener(ln, MaxConns)
	srv := &http.Server{
		ConnState:         lln.state,
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       WriteTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// The grace is over: what is still open is cut.
		srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return nil
}

// limitListener accepts at most n connections at a time: past that it
// closes the one idle the longest, or waits while none is idle. Its state
// method is the server's ConnState.
func limitListener(ln net.Listener, n int) *limitedListener {
	return &limitedListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{}), idle: map[net.Conn]time.Time{}}
}

type limitedListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu sync.Mutex
	// idle are the connections without a request in flight, since when.
	idle map[net.Conn]time.Time
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		l.evict()
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

// state follows which connections are idle.
func (l *limitedListener) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew, http.StateIdle:
		l.idle[c] = time.Now()
	default:
		delete(l.idle, c)
	}
}

// evict closes the connection idle the longest, if one is.
func (l *limitedListener) evict() {
	l.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.idle, oldest)
	l.mu.Unlock()
	if oldest != nil {
		oldest.Close()
	}
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
