// Package hostile holds what the tests of untrusted text share: strings an
// attacker would put in a process name, a command line, a cgroup
// directory, a Prometheus label, a recording or a log, a fake /proc entry
// that carries them, and the check that output holds no control sequence.
package hostile

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Strings are the seed corpus: each one tries to make a terminal do
// something.
var Strings = []string{
	"\x1b]52;c;cm0gLXJmIH4K\a",             // OSC 52: write the clipboard
	"\x1b]2;owned\a",                       // OSC 2: set the window title, BEL-ended
	"\x1b]0;owned\x1b\\",                   // OSC 0, ST-ended
	"\x1b[2J\x1b[H",                        // CSI: clear the screen, cursor home
	"\x1b[31mred\x1b[0m",                   // SGR colour
	"\u009b2J",                             // 8-bit CSI as UTF-8
	"\u009d52;c;eA==\u009c",                // 8-bit OSC as UTF-8, 8-bit ST
	"\x9b2J",                               // 8-bit CSI as a raw byte
	"\x9d2;owned\a",                        // 8-bit OSC as a raw byte
	"\u202egnp.exe\u202c",                  // right-to-left override
	"\u2066isolate\u2069\u2067\u2068",      // isolates
	"\xff\xfe\xc3",                         // not UTF-8
	"del\x7fbel\a",                         // DEL, BEL
	"two\nlines\rback\ttab",                // a second line, a carriage return
	"\x1bP+q544e\x1b\\",                    // DCS
	"name\x00after",                        // NUL
	"ok \u65e5\u672c \u00e9 \u2014 \uFFFD", // clean text must stay as it is
}

// Check reports the first thing in out that no output of vramtop may hold
// when it prints text from outside: ESC, BEL, a C1 control (U+0080–U+009F
// or a raw byte 0x80–0x9F that is not part of UTF-8), another C0 control
// than newline and tab, DEL, or a bidirectional override or isolate. nil
// when there is none.
func Check(out []byte) error {
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRune(out[i:])
		bad := ""
		switch {
		case r == utf8.RuneError && n == 1 && out[i] >= 0x80 && out[i] < 0xa0:
			bad = "a raw C1 byte"
		case r == 0x1b:
			bad = "ESC"
		case r == 0x07:
			bad = "BEL"
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			bad = "a control character"
		case r >= 0x80 && r < 0xa0:
			bad = "a C1 control"
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			bad = "a bidirectional override"
		}
		if bad != "" {
			lo, hi := max(0, i-40), min(len(out), i+40)
			return fmt.Errorf("%s at byte %d: %q", bad, i, out[lo:hi])
		}
		i += n
	}
	return nil
}

// Proc is one process of a fake /proc.
type Proc struct {
	PID     int
	UID     int
	Comm    string // /proc/PID/comm, without its newline
	Cmdline string // /proc/PID/cmdline as it is: NUL-separated
	Cgroup  string // /proc/PID/cgroup
}

// WriteProc writes p under root (a fake /proc), with a /proc/stat that
// gives the boot time.
func WriteProc(root string, p Proc) error {
	dir := filepath.Join(root, strconv.Itoa(p.PID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Fields 3..24 of stat: state, ppid, ..., utime (14), stime (15),
	// starttime (22), vsize, rss (24).
	stat := strconv.Itoa(p.PID) + " (" + p.Comm + ") S 1 1 1 0 -1 0 0 0 0 0 50 10 0 0 20 0 1 0 1000 4096 256\n"
	files := map[string]string{
		"stat":    stat,
		"status":  "Name:\tx\nUid:\t" + strconv.Itoa(p.UID) + "\t" + strconv.Itoa(p.UID) + "\t0\t0\n",
		"comm":    p.Comm + "\n",
		"cmdline": p.Cmdline,
		"cgroup":  p.Cgroup,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(root, "stat"), []byte("cpu 0 0 0 0\nbtime 1700000000\n"), 0o644)
}

// JSON is s as a JSON string literal that keeps its bytes as they are
// where JSON allows: only the quote, the backslash and C0 controls are
// escaped, so a raw 0x9b byte or a U+009B stays raw, as a hand-made answer
// or recording would carry it.
func JSON(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// Texts are every string in v, a value of any type: the fields of
// structs, the elements of slices, arrays and maps (keys too), through
// pointers and interfaces.
func Texts(v any) []string {
	var out []string
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out = append(out, v.String())
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Key())
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}

// CheckTexts is Check of every string in v (Texts).
func CheckTexts(v any) error {
	for _, s := range Texts(v) {
		if err := Check([]byte(s)); err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
	}
	return nil
}

// Recording is a recording (vramtop record's format 2, JSON Lines) of one
// GPU and one process whose every string holds s: the header, a keyframe
// and a delta line that changes the command line.
func Recording(s string) string {
	j := JSON
	return `{"format":"vramtop-record","version":2,"created":"2026-11-29T12:00:00Z","program":` + j("vramtop "+s) +
		`,"hostname":` + j("host"+s) + `,"source":"nvml","driver_version":` + j("580"+s) +
		`,"interval":"1s","history":"1h0m0s","devices":[{"id":"0","index":0,"name":` + j("NVIDIA H100"+s) +
		`,"uuid":` + j("GPU-"+s) + `,"pci_bus_id":` + j("0000:18:00.0"+s) + `}]}` + "\n" +
		`{"t":"2026-11-29T12:00:01Z","seq":1,"key":true,"d":[{"id":"0","tot":85899345920,"used":10737418240,"free":75161927680,"err":` + j("lost"+s) +
		`,"p":[{"pid":4242,"user":` + j("eve"+s) + `,"uid":1000,"cmd":` + j("python "+s) + `,"used":10737418240,"type":"compute","ct":` + j("ct"+s) +
		`,"job":{"slurm_job_id":"7","slurm_step":` + j(s) + `,"k8s_pod_uid":` + j("pod"+s) + `},"vis":true,"st":1795953000000000000}]}],"w":[` + j("warning "+s) + `],"err":` + j("failed "+s) + `}` + "\n" +
		`{"t":"2026-11-29T12:00:02Z","seq":2,"kf":1795953601000000000,"dd":[{"i":0,"dp":[{"i":0,"cmd":` + j("torchrun "+s) + `,"user":` + j("mallory"+s) + `}]}]}` + "\n"
}

// FleetSeries are the series of one host of vramtop serve, as Prometheus
// answers them, with s in every label value: the result arrays of the
// devices' totals, of the devices' values and of the processes.
func FleetSeries(s string) (totals, values, procs string) {
	j := JSON
	dev := `"hostname":` + j("node"+s) + `,"gpu":"0","UUID":` + j("GPU-"+s) + `,"modelName":` + j("H100"+s) +
		`,"pci_bus_id":` + j("0000:18:00.0"+s) + `,"instance":` + j("10.0.0.1:9400"+s) + `,"job":"vramtop"`
	series := func(name, v, extra string) string {
		return `{"metric":{"__name__":"` + name + `",` + dev + extra + `},"value":[1764417600.5,"` + v + `"]}`
	}
	totals = series("vramtop_gpu_memory_total_bytes", "85899345920", "")
	values = totals + "," + series("vramtop_gpu_memory_used_bytes", "83751862272", "") + "," +
		series("vramtop_gpu_memory_free_bytes", "2147483648", "")
	procs = series("vramtop_process_gpu_memory_bytes", "42949672960", `,"pid":"4242","user":`+j("eve"+s)+
		`,"command":`+j("python "+s)+`,"type":`+j("compute"+s)+`,"container_id":`+j("ct"+s))
	return totals, values, procs
}

// Prometheus answers /api/v1/query with the result array results holds
// for the query (none for another), and /api/v1/query_range with none.
func Prometheus(results map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		kind, res := "vector", results[r.Form.Get("query")]
		if r.URL.Path == "/api/v1/query_range" {
			kind, res = "matrix", ""
		}
		io.WriteString(w, `{"status":"success","data":{"resultType":"`+kind+`","result":[`+res+`]}}`)
	})
}
