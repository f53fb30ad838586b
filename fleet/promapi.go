package fleet

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/vramtop/vramtop/internal/inert"
)

// MaxAnswerBytes bounds one answer of Prometheus, as read off the wire: a
// larger one is an error, never decoded.
const MaxAnswerBytes = 64 << 20

// ErrAnswerTooLarge is what a query's error is (errors.Is) when the answer
// is over MaxAnswerBytes.
var ErrAnswerTooLarge = fmt.Errorf("answer larger than %d MiB", MaxAnswerBytes>>20)

// Client queries Prometheus's HTTP API (/api/v1/query and query_range),
// each answer limited to MaxAnswerBytes and decoded by decodeAnswer
// straight into Samples or Series.
type Client struct {
	base       *url.URL
	hc         *http.Client
	query      string // the endpoints' URLs
	queryRange string
}

// NewClient returns a client for the Prometheus server at rawURL
// ("http://prometheus:9090", with or without a path prefix). hc, when not
// nil, gives the transport.
func NewClient(rawURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %v", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http://HOST:PORT", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	var rt http.RoundTripper = http.DefaultTransport
	if hc != nil && hc.Transport != nil {
		rt = hc.Transport
	}
	return &Client{
		base:       u,
		hc:         &http.Client{Transport: limitedTransport{rt, MaxAnswerBytes}},
		query:      u.JoinPath("api/v1/query").String(),
		queryRange: u.JoinPath("api/v1/query_range").String(),
	}, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// Sample is one series of an instant query.
type Sample struct {
	Metric Labels
	Value  float64
}

// Series is one series of a range query.
type Series struct {
	Metric Labels
	Times  []time.Time
	Values []float64
}

// Query runs an instant query at the server's current time.
func (c *Client) Query(ctx context.Context, q string) ([]Sample, error) {
	a, err := c.ask(ctx, c.query, url.Values{"query": {q}}, resultVector)
	if err != nil {
		return nil, c.queryError(q, err)
	}
	return a.samples, nil
}

// QueryAt runs an instant query at time at.
func (c *Client) QueryAt(ctx context.Context, q string, at time.Time) ([]Sample, error) {
	a, err := c.ask(ctx, c.query, url.Values{"query": {q}, "time": {formatTime(at)}}, resultVector)
	if err != nil {
		return nil, c.queryError(q, err)
	}
	return a.samples, nil
}

// QueryRange runs a range query.
func (c *Client) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]Series, error) {
	args := url.Values{"query": {q}, "start": {formatTime(start)}, "end": {formatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	a, err := c.ask(ctx, c.queryRange, args, resultMatrix)
	if err != nil {
		return nil, c.queryError(q, err)
	}
	return a.series, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', -1, 64)
}

// bodies are the buffers answers are read into: decoding copies what it
// keeps, so a buffer serves the next answer.
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// ask posts args to the endpoint (a GET where the server refuses POST, as
// a read-only proxy may) and decodes the answer, a result of type want.
func (c *Client) ask(ctx context.Context, endpoint string, args url.Values, want string) (answer, error) {
	buf := bodies.Get().(*[]byte)
	defer bodies.Put(buf)
	form := args.Encode()
	var held int64
	defer func() { answersHeld.Add(-held) }()
	code, body, err := c.do(ctx, http.MethodPost, endpoint, form, *buf, &held)
	if err == nil && (code == http.StatusForbidden || code == http.StatusMethodNotAllowed || code == http.StatusNotImplemented) {
		code, body, err = c.do(ctx, http.MethodGet, endpoint+"?"+form, "", body, &held)
	}
	// A big buffer is not kept for the next answer: the memory of one
	// large answer goes back once it is decoded.
	if cap(body) <= keepBuffer {
		*buf = body[:0]
	} else {
		*buf = nil
	}
	if errors.Is(err, ErrAnswerTooLarge) {
		// What was read of it is garbage now, as much as the budget:
		// given back at once, not when the heap next doubles.
		body = nil
		answersHeld.Add(-held)
		held = 0
		debug.FreeOSMemory()
	}
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		return answer{}, err
	}
	if code == http.StatusNotFound && c.isExporter(ctx) {
		return answer{}, errExporter
	}
	if code/100 != 2 {
		return answer{}, statusError(code, body)
	}
	a, err := decodeAnswer(body, want)
	if err != nil {
		return answer{}, &apiError{Type: "bad_response", Msg: err.Error()}
	}
	if a.status == "error" {
		return answer{}, &apiError{Type: a.errorType, Msg: a.errMsg}
	}
	if a.status != "success" {
		return answer{}, &apiError{Type: "bad_response", Msg: fmt.Sprintf("status %q, want success", a.status)}
	}
	if a.resultType != want {
		return answer{}, &resultTypeError{a.resultType, want}
	}
	return a, nil
}

// do sends one request and reads the answer into buf; held counts the
// bytes of answersHeld that buf was grown by.
func (c *Client) do(ctx context.Context, method, target, form string, buf []byte, held *int64) (int, []byte, error) {
	var rd io.Reader
	if form != "" {
		rd = strings.NewReader(form)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, buf, err
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		// A query only reads: the transport may retry it.
		req.Header["Idempotency-Key"] = nil
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, buf, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > MaxAnswerBytes {
		return 0, buf, ErrAnswerTooLarge
	}
	b, err := readAll(resp.Body, buf[:0], resp.ContentLength, held)
	return resp.StatusCode, b, err
}

// keepBuffer is the largest answer buffer kept for the next answer.
const keepBuffer = 1 << 20

// answersBudget bounds the buffers of all the answers being read at once
// (a round asks five queries together): past it, the answer that would
// grow its buffer fails as too large. answersHeld is what they hold.
const answersBudget = MaxAnswerBytes + 64<<10

var answersHeld atomic.Int64

// budgetError is an answer refused for answersBudget.
type budgetError struct{}

func (budgetError) Error() string {
	return fmt.Sprintf("answers larger than %d MiB together", answersBudget>>20)
}

func (budgetError) Is(target error) bool { return target == ErrAnswerTooLarge }

// grow makes room in b for at least more bytes, never past what the
// limit of an answer needs, charging the new room to answersHeld (held).
func grow(b []byte, more int, held *int64) ([]byte, error) {
	n := min(max(cap(b)+more, len(b)+more), MaxAnswerBytes+4<<10)
	if n <= cap(b) {
		return b, nil
	}
	need := int64(n) - int64(cap(b))
	if answersHeld.Add(need) > answersBudget {
		answersHeld.Add(-need)
		return b, budgetError{}
	}
	*held += need
	return slices.Grow(b, n-len(b)), nil
}

// readAll appends what r reads to b until the end. b grows only when it
// is full, to twice its size (bytes.Buffer grows a buffer that has room
// for all but its last 512 bytes, so a reused buffer would grow on every
// answer); size, when known, is the room needed.
func readAll(r io.Reader, b []byte, size int64, held *int64) ([]byte, error) {
	var err error
	if size > 0 && size < MaxAnswerBytes && cap(b)-len(b) < int(size)+1 {
		if b, err = grow(b, int(size)+1, held); err != nil {
			return b, err
		}
	}
	if cap(b)-len(b) < 4<<10 {
		if b, err = grow(b, 64<<10, held); err != nil {
			return b, err
		}
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			if b, err = grow(b, len(b), held); err != nil {
				return b, err
			}
		}
	}
}

// statusError is the error of an answer with HTTP status code: Prometheus's
// own (its errorType and error) where the body is one, else the status and
// the start of the body.
func statusError(code int, body []byte) error {
	if a, err := decodeAnswer(body, ""); err == nil && a.status == "error" && (a.errorType != "" || a.errMsg != "") {
		if a.errorType == "" {
			a.errorType = "server_error"
			if code/100 == 4 {
				a.errorType = "client_error"
			}
		}
		if a.errMsg == "" {
			a.errMsg = fmt.Sprintf("HTTP status %d", code)
		}
		return &apiError{Type: a.errorType, Msg: a.errMsg}
	}
	e := &apiError{Type: "bad_response", Msg: fmt.Sprintf("bad response code %d", code), Detail: oneLine(body[:min(len(body), 1024)])}
	switch code / 100 {
	case 4:
		e.Type, e.Msg = "client_error", fmt.Sprintf("client error: %d", code)
	case 5:
		e.Type, e.Msg = "server_error", fmt.Sprintf("server error: %d", code)
	}
	return e
}

// oneLine is the start of a body that is not Prometheus's (an HTML page of
// a proxy, a server's text) as one inert line: its white space runs become
// one space, a control character or bidirectional override U+FFFD. It is
// printed on stderr.
func oneLine(b []byte) string {
	return inert.String(strings.Join(strings.Fields(string(b)), " "))
}

// apiError is an error answer of Prometheus's API (its errorType and
// error), or an answer that is not one of its answers.
type apiError struct {
	Type, Msg string
	// Detail is the start of the body of an answer that was not
	// Prometheus's.
	Detail string
}

func (e *apiError) Error() string { return e.Type + ": " + e.Msg }

// resultTypeError is an answer of another type than the query's (a scalar
// for an instant query that wants a vector).
type resultTypeError struct{ got, want string }

func (e *resultTypeError) Error() string {
	return fmt.Sprintf("result type %s, want %s", cmp.Or(e.got, "none"), e.want)
}

// errExporter is the answer of an address that has no Prometheus API but
// serves /metrics: an exporter, given where Prometheus was wanted.
var errExporter = errors.New("exporter, not Prometheus")

// isExporter reports whether the server answers /metrics as an exporter
// does (a text exposition: "# HELP", "# TYPE").
func (c *Client) isExporter(ctx context.Context) bool {
	buf := make([]byte, 0, 4<<10)
	var held int64
	defer func() { answersHeld.Add(-held) }()
	code, body, err := c.do(ctx, http.MethodGet, c.base.JoinPath("metrics").String(), "", buf, &held)
	return err == nil && code == http.StatusOK && (bytes.Contains(body, []byte("# TYPE ")) || bytes.Contains(body, []byte("# HELP ")))
}

// queryError is err as one line: the server, the query and the cause.
func (c *Client) queryError(q string, err error) error {
	if errors.Is(err, errExporter) {
		return fmt.Errorf("%s answers like an exporter (metrics on /metrics, no Prometheus API): "+
			"--prometheus wants the Prometheus server that scrapes it, as http://prometheus:9090", c.base.Host)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var aerr *apiError
	if errors.As(err, &aerr) {
		msg := strings.Join(strings.Fields(aerr.Msg), " ")
		if d := strings.Join(strings.Fields(aerr.Detail), " "); d != "" && !strings.Contains(msg, d) {
			if len(d) > 200 {
				d = cut(d, 200) + "…"
			}
			msg += ": " + d
		}
		if len(msg) > 4096 {
			msg = cut(msg, 4096) + "…"
		}
		return fmt.Errorf("prometheus at %s: query %s: %s: %s", c.base.Host, q, aerr.Type, msg)
	}
	if errors.Is(err, ErrAnswerTooLarge) {
		return fmt.Errorf("prometheus at %s: query %s: %w", c.base.Host, q, ErrAnswerTooLarge)
	}
	var terr *resultTypeError
	if errors.As(err, &terr) {
		return fmt.Errorf("prometheus at %s: query %s: %w", c.base.Host, q, err)
	}
	if why, ok := unreachable(err); ok {
		return &reachError{fmt.Sprintf("cannot reach Prometheus at %s://%s: %s", c.base.Scheme, c.base.Host, why), err}
	}
	return fmt.Errorf("prometheus at %s: %w", c.base.Host, err)
}

// reachError is a failure to reach Prometheus, said in a user's words; it
// unwraps to the network's error.
type reachError struct {
	msg string
	err error
}

func (e *reachError) Error() string { return e.msg }
func (e *reachError) Unwrap() error { return e.err }

// unreachable says why err, a failure to reach a server, happened, in
// words a user reads (not "dial tcp 127.0.0.1:9090: connect: connection
// refused"), and whether it was one.
func unreachable(err error) (string, bool) {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host " + strconv.Quote(dns.Name), true
		}
		return "cannot look up " + strconv.Quote(dns.Name), true
	}
	for _, e := range []struct {
		errno syscall.Errno
		why   string
	}{
		{syscall.ECONNREFUSED, "connection refused (nothing listens there)"},
		{syscall.ECONNRESET, "the connection was reset"},
		{syscall.EHOSTUNREACH, "no route to the host"},
		{syscall.ENETUNREACH, "the network is unreachable"},
		{syscall.ETIMEDOUT, "the connection timed out"},
		{syscall.EADDRNOTAVAIL, "the address is not available"},
		{syscall.EPIPE, "the connection was closed"},
	} {
		if errors.Is(err, e.errno) {
			return e.why, true
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection was closed before an answer", true
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return "its TLS certificate is not trusted", true
	}
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) {
		return "it does not speak TLS (try http://)", true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		if op.Timeout() {
			return "no answer in time", true
		}
		return "the network failed", true
	}
	return "", false
}

// cut is the first n bytes of s, less the start of a character they would
// cut in two (half a character is not UTF-8; its bytes may read as C1
// controls).
func cut(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:min(n, len(s))]
}

// limitedTransport cuts every answer body at limit bytes: reading past it
// fails with ErrAnswerTooLarge.
type limitedTransport struct {
	rt    http.RoundTripper
	limit int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.limit}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a larger one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, ErrAnswerTooLarge
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
