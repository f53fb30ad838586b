package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// MaxAnswerBytes bounds one answer of Prometheus, as read off the wire: a
// larger one is an error, never decoded.
const MaxAnswerBytes = 64 << 20

// ErrAnswerTooLarge is what a query's error is (errors.Is) when the answer
// is over MaxAnswerBytes.
var ErrAnswerTooLarge = fmt.Errorf("answer larger than %d MiB", MaxAnswerBytes>>20)

// Client queries Prometheus's HTTP API through client_golang's API client,
// each answer limited to MaxAnswerBytes.
type Client struct {
	base *url.URL
	api  v1.API
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
	var rt http.RoundTripper = http.DefaultTransport
	if hc != nil && hc.Transport != nil {
		rt = hc.Transport
	}
	ac, err := api.NewClient(api.Config{Address: u.String(), RoundTripper: limitedTransport{rt, MaxAnswerBytes}})
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %v", rawURL, err)
	}
	return &Client{base: u, api: v1.NewAPI(ac)}, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// Sample is one series of an instant query.
type Sample struct {
	Metric model.Metric
	Value  float64
}

// Series is one series of a range query.
type Series struct {
	Metric model.Metric
	Times  []time.Time
	Values []float64
}

// Query runs an instant query at the server's current time.
func (c *Client) Query(ctx context.Context, q string) ([]Sample, error) {
	v, _, _, err := c.api.Query(ctx, q, time.Time{})
	if err != nil {
		return nil, c.queryError(q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus at %s: query %s: result type %s, want vector", c.base.Host, q, v.Type())
	}
	out := make([]Sample, len(vec))
	for i, s := range vec {
		out[i] = Sample{Metric: s.Metric, Value: float64(s.Value)}
	}
	return out, nil
}

// QueryRange runs a range query.
func (c *Client) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]Series, error) {
	v, _, _, err := c.api.QueryRange(ctx, q, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, c.queryError(q, err)
	}
	mat, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus at %s: query %s: result type %s, want matrix", c.base.Host, q, v.Type())
	}
	out := make([]Series, len(mat))
	for i, ss := range mat {
		s := Series{Metric: ss.Metric, Times: make([]time.Time, len(ss.Values)), Values: make([]float64, len(ss.Values))}
		for j, p := range ss.Values {
			s.Times[j], s.Values[j] = p.Timestamp.Time(), float64(p.Value)
		}
		out[i] = s
	}
	return out, nil
}

// queryError is err as one line: the server, the query and the cause.
func (c *Client) queryError(q string, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var aerr *v1.Error
	if errors.As(err, &aerr) {
		msg := aerr.Msg
		if d := strings.Join(strings.Fields(aerr.Detail), " "); d != "" && !strings.Contains(msg, d) {
			if len(d) > 200 {
				d = d[:200] + "…"
			}
			msg += ": " + d
		}
		if len(msg) > 4096 {
			msg = msg[:4096] + "…"
		}
		return fmt.Errorf("prometheus at %s: query %s: %s: %s", c.base.Host, q, aerr.Type, msg)
	}
	if errors.Is(err, ErrAnswerTooLarge) {
		return fmt.Errorf("prometheus at %s: query %s: %w", c.base.Host, q, ErrAnswerTooLarge)
	}
	return fmt.Errorf("prometheus at %s: %w", c.base.Host, err)
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
