package recorder

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"512": 512, "4K": 4000, "4KiB": 4 << 10, "100M": 100e6, "100MB": 100e6, "64MiB": 64 << 20,
		"1.5GiB": 3 << 29, "2GB": 2e9, "1Ti": 1 << 40, " 10M ": 10e6,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "M", "lots", "-1M", "10X", "1e30T", "NaN"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}
