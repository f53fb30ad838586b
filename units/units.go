// Package units reads the sizes people type and writes the sizes vramtop
// shows: one parser, one formatter, for the whole program.
//
// Sizes typed by a user follow the SI and IEC prefixes as most tools do
// (Kubernetes, systemd, go-humanize): "12GB" and "12G" are 12·10⁹ bytes,
// "12GiB" and "12Gi" are 12·2³⁰. Sizes vramtop writes are always binary
// (KiB, MiB, GiB, TiB), the unit nvidia-smi and CUDA report memory in.
package units

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// Binary units.
const (
	KiB uint64 = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
	PiB
	EiB
)

// ParseSize reads a size as typed on a command line or in a config file:
// a byte count ("1073741824") or a number and a unit, any case, a space
// allowed between them: "12GB" or "12G" (12·10⁹ bytes), "12GiB" or "12Gi"
// (12·2³⁰), "1.5TiB", "512 MiB". A fraction of a byte is dropped.
func ParseSize(s string) (uint64, error) {
	in := strings.TrimSpace(s)
	if in == "" || in[0] < '0' || in[0] > '9' && in[0] != '.' || strings.Contains(in, ",") {
		return 0, sizeError(s)
	}
	n, err := humanize.ParseBytes(in)
	if err != nil {
		if strings.Contains(err.Error(), "too large") {
			return 0, fmt.Errorf("invalid size %q: too large", s)
		}
		return 0, sizeError(s)
	}
	return n, nil
}

func sizeError(s string) error {
	return fmt.Errorf("invalid size %q: want a number of bytes, or a number with a unit (GB = 10^9 bytes, GiB = 2^30; also B, kB, MB, TB, KiB, MiB, TiB)", s)
}

// Format says how FormatSize writes a size.
type Format struct {
	// Min is the smallest unit written (1 for bytes, MiB, …): a size
	// below the next unit is a whole number of it, rounded down.
	Min uint64
	// Max is the largest unit written (0: EiB).
	Max uint64
	// Decimals is the number of digits after the point above Min.
	Decimals int
	// Trim drops trailing zeros after the point ("2 GiB", not "2.00 GiB").
	Trim bool
	// Short writes the unit as one letter with no space ("61.2G").
	Short bool
	// Whole writes numbers of 1000 or more without decimals ("1024G").
	Whole bool
}

// Sizes are the formats the program uses.
var (
	// Precise is for reports and explanations: "21 GiB", "1.5 MiB",
	// "512 B".
	Precise = Format{Min: 1, Decimals: 2, Trim: true}
	// Screen is for the live view and tables: "61.2 GiB", "512 MiB".
	Screen = Format{Min: MiB, Max: GiB, Decimals: 1}
	// Narrow is Screen for narrow columns: "61.2G", "512M", "1024G".
	Narrow = Format{Min: MiB, Max: GiB, Decimals: 1, Short: true, Whole: true}
)

var unitNames = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// FormatSize writes b bytes as f says.
func FormatSize(b uint64, f Format) string {
	minUnit, maxUnit := max(f.Min, 1), f.Max
	if maxUnit == 0 {
		maxUnit = EiB
	}
	i, unit := 0, uint64(1)
	for unit < minUnit {
		i, unit = i+1, unit<<10
	}
	var num string
	if b < unit<<10 || unit >= maxUnit {
		num = strconv.FormatUint(b/unit, 10)
	} else {
		v := float64(b) / float64(unit)
		for v >= 1024 && unit < maxUnit {
			v /= 1024
			i, unit = i+1, unit<<10
		}
		dec := f.Decimals
		if f.Whole && v >= 1000 {
			dec = 0
		}
		num = strconv.FormatFloat(v, 'f', dec, 64)
		if f.Trim && strings.Contains(num, ".") {
			num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
		}
	}
	if f.Short {
		return num + unitNames[i][:1]
	}
	return num + " " + unitNames[i]
}
