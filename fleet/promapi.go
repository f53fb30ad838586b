package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client queries Prometheus's HTTP API (/api/v1/query, /api/v1/query_range)
// with plain HTTP and JSON: two endpoints do not justify the API client's
// dependencies.
type Client struct {
	base *url.URL
	http *http.Client
}

// NewClient returns a client for the Prometheus server at rawURL
// ("http://prometheus:9090", with or without a path prefix).
func NewClient(rawURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %v", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http://HOST:PORT", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{base: u, http: hc}, nil
}

// URL returns the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// Sample is one series of an instant query.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Series is one series of a range query.
type Series struct {
	Metric map[string]string
	Times  []time.Time
	Values []float64
}

type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

type apiData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// point is a [unix seconds, "value"] pair.
type point struct {
	t float64
	v float64
}

func (p *point) UnmarshalJSON(b []byte) error {
	// [1764417600.781,"123.5"]: parsed by hand, it is most of an answer.
	s := strings.TrimSpace(string(b))
	if len(s) < 5 || s[0] != '[' || s[len(s)-1] != ']' {
		return fmt.Errorf("sample %s: want [time, \"value\"]", s)
	}
	ts, vs, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok {
		return fmt.Errorf("sample %s: want [time, \"value\"]", s)
	}
	t, err := strconv.ParseFloat(strings.TrimSpace(ts), 64)
	if err != nil {
		return fmt.Errorf("sample %s: %v", s, err)
	}
	vs, err = strconv.Unquote(strings.TrimSpace(vs))
	if err != nil {
		return fmt.Errorf("sample %s: %v", s, err)
	}
	v, err := strconv.ParseFloat(vs, 64)
	if err != nil {
		return fmt.Errorf("sample %s: %v", s, err)
	}
	p.t, p.v = t, v
	return nil
}

func (p point) time() time.Time {
	sec, frac := math.Modf(p.t)
	return time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond))
}

// Query runs an instant query at the server's current time.
func (c *Client) Query(ctx context.Context, q string) ([]Sample, error) {
	data, err := c.do(ctx, "query", url.Values{"query": {q}})
	if err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %q, want vector", q, data.ResultType)
	}
	var res []struct {
		Metric map[string]string `json:"metric"`
		Value  point             `json:"value"`
	}
	if err := json.Unmarshal(data.Result, &res); err != nil {
		return nil, fmt.Errorf("query %s: %v", q, err)
	}
	out := make([]Sample, len(res))
	for i, r := range res {
		out[i] = Sample{Metric: r.Metric, Value: r.Value.v}
	}
	return out, nil
}

// QueryRange runs a range query.
func (c *Client) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]Series, error) {
	data, err := c.do(ctx, "query_range", url.Values{
		"query": {q},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1e3, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1e3, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
	if err != nil {
		return nil, err
	}
	if data.ResultType != "matrix" {
		return nil, fmt.Errorf("query %s: result type %q, want matrix", q, data.ResultType)
	}
	var res []struct {
		Metric map[string]string `json:"metric"`
		Values []point           `json:"values"`
	}
	if err := json.Unmarshal(data.Result, &res); err != nil {
		return nil, fmt.Errorf("query %s: %v", q, err)
	}
	out := make([]Series, len(res))
	for i, r := range res {
		s := Series{Metric: r.Metric, Times: make([]time.Time, len(r.Values)), Values: make([]float64, len(r.Values))}
		for j, p := range r.Values {
			s.Times[j], s.Values[j] = p.time(), p.v
		}
		out[i] = s
	}
	return out, nil
}

// maxErrBody bounds what is read of an error response.
const maxErrBody = 4096

func (c *Client) do(ctx context.Context, endpoint string, form url.Values) (*apiData, error) {
	u := c.base.JoinPath("api", "v1", endpoint)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("prometheus at %s: %w", c.base.Host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("prometheus at %s: reading the answer: %w", c.base.Host, err)
	}
	var ar apiResponse
	if jerr := json.Unmarshal(body, &ar); jerr != nil || ar.Status == "" {
		snippet := bytes.TrimSpace(body)
		if len(snippet) > 200 {
			snippet = snippet[:200]
		}
		return nil, fmt.Errorf("prometheus at %s: %s %s: HTTP %d: %q", c.base.Host, endpoint, form.Get("query"), resp.StatusCode, snippet)
	}
	if ar.Status != "success" {
		msg := ar.Error
		if len(msg) > maxErrBody {
			msg = msg[:maxErrBody]
		}
		return nil, fmt.Errorf("prometheus at %s: query %s: %s: %s", c.base.Host, form.Get("query"), ar.ErrorType, msg)
	}
	var data apiData
	if err := json.Unmarshal(ar.Data, &data); err != nil {
		return nil, fmt.Errorf("prometheus at %s: %v", c.base.Host, err)
	}
	return &data, nil
}
