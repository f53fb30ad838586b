package advisor

import (
	"math/big"
	"strings"
)

// sizePat matches a size as OOM messages print it: a decimal number, a unit
// (every unit in these messages is a power of 2: KB, MB and GB as printed by
// MPS, TensorFlow and vLLM mean KiB, MiB and GiB), and optionally the exact
// byte count beside it: "20.00 GiB (21474836480 bytes)", "2.00GiB (rounded
// to 2147483648)", "2.00GiB (2147483648B)". Groups: number, unit, exact.
const sizePat = `(\d+(?:\.\d+)?)\s*(bytes|byte|KiB|MiB|GiB|TiB|PiB|KB|MB|GB|TB|PB|kB|B|K|M|G|T)(?:\s*\((?:rounded\s*to\s*)?(\d+)\s*(?:bytes|B)?\))?`

// sz is sizePat for use inside other patterns.
var sz = sizePat

func unitShift(u string) uint {
	switch strings.ToUpper(u[:1]) {
	case "K":
		return 10
	case "M":
		return 20
	case "G":
		return 30
	case "T":
		return 40
	case "P":
		return 50
	}
	return 0 // bytes, byte, B
}

// toBytes converts a decimal number in a binary unit to bytes, exactly,
// rounding half up. ok is false for a malformed number or one that does not
// fit in 64 bits.
func toBytes(num, unit string) (uint64, bool) {
	intPart, frac, _ := strings.Cut(num, ".")
	if intPart == "" {
		return 0, false
	}
	m, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return 0, false
	}
	m.Lsh(m, unitShift(unit))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := new(big.Int).QuoRem(m, den, new(big.Int))
	if r.Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return 0, false
	}
	return q.Uint64(), true
}

// sizeFrom converts the three groups of sizePat (number, unit, exact) to
// bytes: the exact count when printed, else the number in its unit.
func sizeFrom(num, unit, exact string) (uint64, bool) {
	if exact != "" {
		if v, ok := toBytes(exact, "B"); ok {
			return v, true
		}
	}
	return toBytes(num, unit)
}
