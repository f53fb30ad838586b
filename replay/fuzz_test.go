package replay

import (
	"bytes"
	"os"
	"testing"

	"github.com/vramtop/vramtop/recorder"
)

// FuzzDecodeLine: no line, however damaged, panics the decoder or the
// expansion of a delta against a keyframe.
//
//	go test -fuzz FuzzDecodeLine -fuzztime 30s ./replay
func FuzzDecodeLine(f *testing.F) {
	data, err := os.ReadFile("testdata/format1.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	kfLine := lines[1]
	var kf recorder.Record
	if err := recorder.DecodeRecord(kfLine, &kf); err != nil {
		f.Fatal(err)
	}
	for _, l := range lines[1:4] {
		f.Add(l)
	}
	f.Add([]byte(`{"t":"2026-03-14T02:55:01Z","kf":1773456900000000000,"dd":[{"i":0,"used":5,"dp":[{"i":1,"clr":["util"]},{"n":true,"pid":9}],"gone":[0],"ord":[1,1,0,1],"srt":true}]}`))
	f.Add([]byte(`{"t":"2026-03-14T02:55:01Z","kf":1,"dd":[{"i":9}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if rec, err := decodeLine(b, nil); err == nil {
			_ = checkTimes(&rec)
		}
		decodeLine(b, &kf)
		readHead(b)
	})
}
