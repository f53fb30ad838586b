package fleet

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vramtop/vramtop/internal/hostile"
)

// hostileProm answers the fleet's queries with one host whose every label
// value holds s, written into the JSON with its bytes as they are.
func hostileProm(s string) http.Handler {
	j := hostile.JSON
	dev := `"hostname":` + j("node"+s) + `,"gpu":"0","UUID":` + j("GPU-"+s) + `,"modelName":` + j("H100"+s) + `,"pci_bus_id":` + j("0000:18:00.0"+s) + `,"instance":` + j("10.0.0.1:9400"+s) + `,"job":"vramtop"`
	series := func(name string, v string, extra string) string {
		return `{"metric":{"__name__":"` + name + `",` + dev + extra + `},"value":[1764417600.5,"` + v + `"]}`
	}
	answers := map[string]string{
		QueryDevices: series("vramtop_gpu_memory_total_bytes", "85899345920", ""),
		QueryValues: strings.Join([]string{series("vramtop_gpu_memory_total_bytes", "85899345920", ""),
			series("vramtop_gpu_memory_used_bytes", "10737418240", ""), series("vramtop_gpu_memory_free_bytes", "75161927680", "")}, ","),
		QueryProcs: series("vramtop_process_gpu_memory_bytes", "10737418240", `,"pid":"4242","user":`+j("eve"+s)+`,"command":`+j("python "+s)+`,"type":`+j("compute"+s)+`,"container_id":`+j("ct"+s)),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		kind := "vector"
		if r.URL.Path == "/api/v1/query_range" {
			kind = "matrix"
		}
		res := ""
		if kind == "vector" {
			res = answers[r.Form.Get("query")]
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"` + kind + `","result":[` + res + `]}}`))
	})
}

// Labels are written by any host Prometheus scrapes: the fleet's snapshot
// holds them inert.
func TestFleetLabelsAreInert(t *testing.T) {
	for _, s := range hostile.Strings {
		srv := httptest.NewServer(hostileProm(s))
		src, smp, clk := newFleet(t, srv.URL, 0)
		snap, _ := next(src, smp, clk)
		srv.Close()
		if len(snap.Devices) != 1 || len(snap.Devices[0].Processes) != 1 {
			t.Fatalf("%q: devices %+v", s, snap.Devices)
		}
		if err := hostile.CheckTexts(snap); err != nil {
			t.Errorf("labels holding %q: %v", s, err)
		}
		if p := snap.Devices[0].Processes[0]; !strings.HasPrefix(p.Command, "python ") || !strings.HasPrefix(p.User, "eve") {
			t.Errorf("%q: process %+v", s, p)
		}
	}
}

// The body of an answer that is not Prometheus's (a proxy's page) goes
// into the error vramtop prints: one inert line.
func TestErrorBodyIsInert(t *testing.T) {
	for _, s := range hostile.Strings {
		for _, body := range []string{"<html>" + s + "</html>", `{"status":"error","errorType":"bad_data","error":` + hostile.JSON("parse error: "+s) + `}`} {
			c := answerServer(t, http.StatusBadGateway, body)
			_, err := c.Query(context.Background(), "q")
			if err == nil {
				t.Fatalf("%q: no error", body)
			}
			msg := err.Error()
			if e := hostile.Check([]byte(msg)); e != nil || strings.Contains(msg, "\n") {
				t.Errorf("body %q: error %q: %v", body, msg, e)
			}
		}
	}
}
