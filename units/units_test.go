package units

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"12GB", 12_000_000_000},
		{"12G", 12_000_000_000},
		{"12gb", 12_000_000_000},
		{"12GiB", 12 << 30},
		{"12Gi", 12 << 30},
		{"12 GiB", 12 << 30},
		{"  512MiB ", 512 << 20},
		{"1.5TiB", 3 << 39},
		{"1.5TB", 1_500_000_000_000},
		{"40kB", 40_000},
		{"40KiB", 40 << 10},
		{"1073741824", 1 << 30},
		{"0", 0},
		{"1.9", 1},
		{"18446744073709551615", 1<<64 - 1},
	} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseSizeRejects(t *testing.T) {
	for _, in := range []string{"", "GiB", "-1G", "20X", "1..5G", "twelve", "12 G B", "1,000", "16EiB", "18446744073709551616"} {
		got, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "invalid size ") || strings.Contains(msg, "\n") || strings.Contains(msg, "strconv") {
			t.Errorf("ParseSize(%q): error %q is not one plain line", in, msg)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, c := range []struct {
		b    uint64
		f    Format
		want string
	}{
		{0, Precise, "0 B"},
		{512, Precise, "512 B"},
		{1023, Precise, "1023 B"},
		{1024, Precise, "1 KiB"},
		{1536 << 10, Precise, "1.5 MiB"},
		{21 << 30, Precise, "21 GiB"},
		{2147483648 + 10<<20, Precise, "2.01 GiB"},
		{1148903752, Precise, "1.07 GiB"},
		{3 << 40, Precise, "3 TiB"},
		{1<<64 - 1, Precise, "16 EiB"},

		{0, Screen, "0 MiB"},
		{(512 << 20) + 1000, Screen, "512 MiB"},
		{1<<30 - 1, Screen, "1023 MiB"},
		{1 << 30, Screen, "1.0 GiB"},
		{61<<30 + 200<<20, Screen, "61.2 GiB"},
		{2 << 40, Screen, "2048.0 GiB"},

		{512 << 20, Narrow, "512M"},
		{61<<30 + 200<<20, Narrow, "61.2G"},
		{999 << 30, Narrow, "999.0G"},
		{1024 << 30, Narrow, "1024G"},
	} {
		if got := FormatSize(c.b, c.f); got != c.want {
			t.Errorf("FormatSize(%d, %+v) = %q, want %q", c.b, c.f, got, c.want)
		}
	}
}

// What FormatSize writes in the precise format, ParseSize reads back to
// within the rounding of two decimals.
func TestFormatParseRoundTrip(t *testing.T) {
	for _, b := range []uint64{0, 1, 1000, 4096, 123456789, 80 << 30, 141 << 30, 7<<40 + 12345} {
		s := FormatSize(b, Precise)
		got, err := ParseSize(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			t.Fatalf("%d → %q: %v", b, s, err)
		}
		diff := float64(got) - float64(b)
		if diff < 0 {
			diff = -diff
		}
		if diff > float64(b)*0.005+1 {
			t.Errorf("%d → %q → %d", b, s, got)
		}
	}
}

func BenchmarkFormatSize(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		FormatSize(uint64(i)<<20, Screen)
	}
}
