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
	totals, values, procs := hostile.FleetSeries(s)
	return hostile.Prometheus(map[string]string{QueryDevices: totals, QueryValues: values, QueryProcs: procs})
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
