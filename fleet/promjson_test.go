package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vramtop/vramtop/internal/inert"
)

// answerServer answers every query with body and HTTP status code.
func answerServer(t *testing.T, code int, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestQueryVector: a vector as Prometheus writes it (labels sorted, the
// value a string, warnings and infos beside the data) decodes into the
// samples, label values with escapes included.
func TestQueryVector(t *testing.T) {
	c := answerServer(t, http.StatusOK, `{"status":"success","data":{"resultType":"vector","result":[`+
		`{"metric":{"__name__":"vramtop_process_gpu_memory_bytes","command":"python -c \"print(1)\"","gpu":"0","hostname":"n\u00e9ud1","pid":"42","user":"ren\u00e9"},"value":[1764417600.5,"1073741824"]},`+
		`{"metric":{"__name__":"vramtop_process_gpu_memory_bytes","command":"a\\b\/c\ttab","gpu":"1","hostname":"n\u00e9ud1","pid":"43","user":"bob"},"value":[1764417600.5,"2e+09"]},`+
		`{"metric":{},"value":[1764417600.5,"NaN"]},`+
		`{"metric":{"x":"1"},"value":[1764417600.5,"+Inf"]},`+
		`{"metric":{"x":"2"},"value":[1764417600.5,"-Inf"]}`+
		`]},"warnings":["PromQL info: metric might not be a counter"],"infos":["x"]}`)
	got, err := c.Query(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d samples, want 5: %+v", len(got), got)
	}
	want0 := Labels{{"__name__", "vramtop_process_gpu_memory_bytes"}, {"command", `python -c "print(1)"`}, {"gpu", "0"}, {"hostname", "n\u00e9ud1"}, {"pid", "42"}, {"user", "ren\u00e9"}}
	if !equalLabels(got[0].Metric, want0) || got[0].Value != 1<<30 {
		t.Errorf("sample 0: %v %v, want %v 1 GiB", got[0].Metric, got[0].Value, want0)
	}
	// A tab is a control character: inert, like an escape.
	if cmd := got[1].Metric.Get("command"); cmd != "a\\b/c\uFFFDtab" || got[1].Value != 2e9 || got[1].Metric.Get("gpu") != "1" {
		t.Errorf("sample 1: command %q, gpu %q, value %v", cmd, got[1].Metric.Get("gpu"), got[1].Value)
	}
	if len(got[2].Metric) != 0 || !math.IsNaN(got[2].Value) {
		t.Errorf("sample 2: %v %v, want no labels and NaN", got[2].Metric, got[2].Value)
	}
	if !math.IsInf(got[3].Value, 1) || !math.IsInf(got[4].Value, -1) || got[3].Metric.Get("x") != "1" || got[4].Metric.Get("x") != "2" {
		t.Errorf("samples 3 and 4: %+v %+v, want +Inf and -Inf", got[3], got[4])
	}
	if got[0].Metric.Get("absent") != "" {
		t.Errorf("an absent label is %q", got[0].Metric.Get("absent"))
	}
	// Appending to one sample's labels must not write into the next's.
	m := append(got[0].Metric, Label{"extra", "1"})
	if got[1].Metric[0].Name != "__name__" || len(m) != 7 {
		t.Errorf("appending to a sample's labels changed the next sample's: %v", got[1].Metric)
	}
}

// TestDecodeNotUTF8: bytes that are not UTF-8 in a label value read as
// encoding/json reads them (U+FFFD each), the same in every series.
func TestDecodeNotUTF8(t *testing.T) {
	body := []byte("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[" +
		"{\"metric\":{\"user\":\"a\xff\xfeb\"},\"value\":[1,\"1\"]},{\"metric\":{\"user\":\"a\xff\xfeb\"},\"value\":[1,\"2\"]}]}}")
	a, err := decodeAnswer(body, resultVector)
	if err != nil || len(a.samples) != 2 {
		t.Fatalf("%d samples, %v", len(a.samples), err)
	}
	for _, s := range a.samples {
		if got := s.Metric.Get("user"); got != "a\uFFFD\uFFFDb" {
			t.Errorf("user %q, want %q", got, "a\uFFFD\uFFFDb")
		}
	}
}

func equalLabels(a, b Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestQueryShapes: the other answers Prometheus gives, and some it does
// not: each is a sample list or a one-line error naming the server, the
// query and the cause.
func TestQueryShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		body  string
		n     int    // samples, when no error
		error string // in the error
	}{
		{"empty", 200, `{"status":"success","data":{"resultType":"vector","result":[]}}`, 0, ""},
		{"result before its type", 200, `{"data":{"result":[{"value":[1,"3"],"metric":{"a":"b"}}],"resultType":"vector"},"status":"success"}`, 1, ""},
		{"white space", 200, " {\n \"status\" : \"success\" ,\t\"data\":{ \"resultType\":\"vector\", \"result\" : [ { \"metric\" : { \"a\" : \"b\" } , \"value\" : [ 1 , \"3\" ] } ] } }\n", 1, ""},
		{"native histogram", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"histogram":[1,{"count":"2","sum":"3","buckets":[[0,"0","1","2"]]}]},{"metric":{"a":"c"},"value":[1,"4"]}]}}`, 1, ""},
		{"error answer", 422, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`, 0,
			"query q: execution: query processing would load too many samples into memory in query execution"},
		{"bad query", 400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error: unexpected \"}\""}`, 0,
			`query q: bad_data: invalid parameter "query": 1:5: parse error: unexpected "}"`},
		{"timeout", 503, `{"status":"error","errorType":"timeout","error":"query timed out in query execution"}`, 0, "query q: timeout: query timed out in query execution"},
		{"error with 200", 200, `{"status":"error","errorType":"internal","error":"boom"}`, 0, "query q: internal: boom"},
		{"not Prometheus", 502, "<html>\n<h1>502 Bad Gateway</h1>\n</html>", 0, "query q: server_error: server error: 502: <html> <h1>502 Bad Gateway</h1> </html>"},
		{"matrix for a vector", 200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}`, 0, "query q: result type matrix, want vector"},
		{"scalar", 200, `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`, 0, "query q: result type scalar, want vector"},
		{"no result type", 200, `{"status":"success","data":{}}`, 0, "query q: result type none, want vector"},
		{"truncated", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1,"3"]},{"metric":{"a":"`, 0,
			"query q: bad_response: unexpected end of the answer"},
		{"truncated escape", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b\"`, 0, "query q: bad_response: unexpected end of the answer"},
		{"not a number", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"lots"]}]}}`, 0, `query q: bad_response: at byte 84 of the answer: number "lots"`},
		{"not JSON", 200, `status: success`, 0, `query q: bad_response: at byte 0 of the answer: want '{', found 's'`},
		{"trailing data", 200, `{"status":"success","data":{"resultType":"vector","result":[]}}{}`, 0, "query q: bad_response: at byte 63 of the answer: data after the answer"},
		{"no status", 200, `{"data":{"resultType":"vector","result":[]}}`, 0, `query q: bad_response: status "", want success`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := answerServer(t, tc.code, tc.body)
			got, err := c.Query(context.Background(), "q")
			if tc.error == "" {
				if err != nil || len(got) != tc.n {
					t.Fatalf("%d samples, error %v; want %d samples", len(got), err, tc.n)
				}
				return
			}
			if err == nil {
				t.Fatalf("%d samples, want an error with %q", len(got), tc.error)
			}
			if !strings.Contains(err.Error(), tc.error) || !strings.HasPrefix(err.Error(), "prometheus at 127.0.0.1:") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error\n%q\nwant one line with\n%q", err, tc.error)
			}
		})
	}
}

// TestQueryRange: a matrix decodes into series with their times (to the
// millisecond, as Prometheus writes them) and values.
func TestQueryRange(t *testing.T) {
	c := answerServer(t, http.StatusOK, `{"status":"success","data":{"resultType":"matrix","result":[`+
		`{"metric":{"gpu":"0","hostname":"a"},"values":[[1764417600,"1"],[1764417605.123,"NaN"]]},`+
		`{"metric":{"gpu":"1","hostname":"a"},"values":[[1764417600,"3"]]}]}}`)
	end := time.Unix(1764417605, 0)
	got, err := c.QueryRange(context.Background(), "q", end.Add(-time.Minute), end, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Times) != 2 || len(got[1].Values) != 1 {
		t.Fatalf("series %+v, want 2 of 2 and 1 points", got)
	}
	if !got[0].Times[1].Equal(time.UnixMilli(1764417605123)) || !math.IsNaN(got[0].Values[1]) || got[0].Values[0] != 1 {
		t.Errorf("series 0: %v %v", got[0].Times, got[0].Values)
	}
	if got[1].Metric.Get("gpu") != "1" || got[1].Values[0] != 3 || !got[1].Times[0].Equal(time.Unix(1764417600, 0)) {
		t.Errorf("series 1: %+v", got[1])
	}
	// An instant query's answer for a range query.
	c = answerServer(t, http.StatusOK, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	if _, err := c.QueryRange(context.Background(), "q", end.Add(-time.Minute), end, 5*time.Second); err == nil || !strings.Contains(err.Error(), "result type vector, want matrix") {
		t.Errorf("error %v, want the result type's", err)
	}
}

// TestQueryFallsBackToGET: a server (a read-only proxy) that refuses POST
// is asked again with GET.
func TestQueryFallsBackToGET(t *testing.T) {
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method)
		if r.Method == http.MethodPost {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		if q := r.URL.Query().Get("query"); q != `up{job="a b"}` || r.URL.Path != "/prefix/api/v1/query" {
			http.Error(w, "query "+q+" at "+r.URL.Path, http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL+"/prefix/", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Query(context.Background(), `up{job="a b"}`)
	if err != nil || len(got) != 1 || strings.Join(methods, ",") != "POST,GET" {
		t.Errorf("%v, %v after %v; want 1 sample after POST,GET", got, err, methods)
	}
}

// TestQueryCanceled: a query whose context ends says so (the source's
// timeout message relies on errors.Is).
func TestQueryCanceled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		w.(http.Flusher).Flush()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	c, _ := NewClient(srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Query(ctx, "q")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the deadline's", err)
	}
}

// FuzzDecodeAnswer: whatever the body, decoding ends with samples or an
// error, never a panic; a body encoding/json reads as an answer decodes to
// the same labels and values.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b\"c","d":"\u00e9"},"value":[1,"NaN"]}]}}`))
	f.Add([]byte(`{"data":{"result":[{"value":[1,"3"],"metric":{"a":"b"}}],"resultType":"vector"},"status":"success"}`))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"x"}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"histogram":[1,{"count":"2","buckets":[[0,"0","1","2"]]}]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"\\\\"},"value":[1,"1e3"]}]},"warnings":["\\"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := decodeAnswer(body, resultVector)
		if err != nil {
			return
		}
		var want struct {
			Data struct {
				ResultType string `json:"resultType"`
				Result     []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &want) != nil || a.resultType != resultVector || want.Data.ResultType != resultVector || len(want.Data.Result) != len(a.samples) {
			return
		}
		for i, s := range a.samples {
			w := want.Data.Result[i]
			if len(w.Metric) != len(s.Metric) {
				return // a label given twice: encoding/json keeps the last
			}
			for _, l := range s.Metric {
				if w.Metric[l.Name] != l.Value {
					t.Errorf("sample %d: label %q = %q, encoding/json reads %q", i, l.Name, l.Value, w.Metric[l.Name])
				}
			}
		}
	})
}

// FuzzLabelValues: label names and values of any content, as
// encoding/json writes them (escapes included), decode to what
// encoding/json reads back, made inert.
func FuzzLabelValues(f *testing.F) {
	f.Add("hostname", "n\u00e9ud\t\"1\"\\", "1.5")
	f.Add("a", "\x00\xff<>&\u2028", "-Inf")
	f.Fuzz(func(t *testing.T, name, value, v string) {
		type series struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		body, err := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector",
			"result": []series{{map[string]string{name: value, "z": name}, [2]any{1.5, v}}}}})
		if err != nil {
			t.Skip()
		}
		var back struct {
			Data struct {
				Result []series `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &back); err != nil {
			t.Fatal(err)
		}
		a, err := decodeAnswer(body, resultVector)
		want, perr := strconv.ParseFloat(v, 64)
		if perr != nil {
			if err == nil {
				t.Errorf("value %q decoded as %v, want an error", v, a.samples[0].Value)
			}
			return
		}
		if err != nil || len(a.samples) != 1 {
			t.Fatalf("%s: %d samples, %v", body, len(a.samples), err)
		}
		s := a.samples[0]
		for k, wv := range back.Data.Result[0].Metric {
			if got := s.Metric.Get(inert.String(k)); got != inert.String(wv) {
				t.Errorf("%s: label %q = %q, want %q", body, k, got, inert.String(wv))
			}
		}
		if s.Value != want && !(math.IsNaN(s.Value) && math.IsNaN(want)) {
			t.Errorf("value %q decoded as %v, want %v", v, s.Value, want)
		}
	})
}
