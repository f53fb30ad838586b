package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnreachableSaysWhy: a Prometheus the fleet cannot reach is said in
// a user's words, never with Go's network text (dial tcp…, connect:, read
// tcp…).
func TestUnreachableSaysWhy(t *testing.T) {
	dial := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://prom:9090/api/v1/query",
			Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 9090}, Err: err}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"refused", dial(&os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}), "connection refused (nothing listens there)"},
		{"no route", dial(&os.SyscallError{Syscall: "connect", Err: syscall.EHOSTUNREACH}), "no route to the host"},
		{"network", dial(&os.SyscallError{Syscall: "connect", Err: syscall.ENETUNREACH}), "the network is unreachable"},
		{"reset", &url.Error{Op: "Post", URL: "http://prom:9090/api/v1/query", Err: &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}}, "the connection was reset"},
		{"no such host", dial(&net.DNSError{Err: "no such host", Name: "prom", IsNotFound: true}), `no such host "prom"`},
		{"lookup failed", dial(&net.DNSError{Err: "server misbehaving", Name: "prom", Server: "10.0.0.53:53"}), `cannot look up "prom"`},
		{"closed", &url.Error{Op: "Post", URL: "http://prom:9090/api/v1/query", Err: io.EOF}, "the connection was closed before an answer"},
		{"certificate", &url.Error{Op: "Post", URL: "https://prom:9090/api/v1/query", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, "its TLS certificate is not trusted"},
		{"not TLS", &url.Error{Op: "Post", URL: "https://prom:9090/api/v1/query", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, "it does not speak TLS (try http://)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient("http://prom:9090", nil)
			if err != nil {
				t.Fatal(err)
			}
			got := c.queryError("up", tc.err).Error()
			if want := "cannot reach Prometheus at http://prom:9090: " + tc.want; got != want {
				t.Errorf("%q\nwant %q", got, want)
			}
			for _, goText := range []string{"dial tcp", "connect:", "read tcp", "tls:", "x509", "lookup "} {
				if strings.Contains(got, goText) {
					t.Errorf("%q carries Go's %q", got, goText)
				}
			}
		})
	}
}

// TestFleetRefusedInUsersWords: the fleet's error when nothing listens
// at --prometheus.
func TestFleetRefusedInUsersWords(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	src, err := Open(context.Background(), Config{URL: url, Interval: time.Hour, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.WaitFirst(context.Background())
	src.mu.Lock()
	got := src.err
	src.mu.Unlock()
	want := "cannot reach Prometheus at " + url + ": connection refused (nothing listens there)"
	if got == nil || got.Error() != want {
		t.Errorf("error %v\nwant %q", got, want)
	}
	if !errors.Is(got, syscall.ECONNREFUSED) {
		t.Errorf("%v does not unwrap to ECONNREFUSED", got)
	}
}
