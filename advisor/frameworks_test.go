package advisor

import (
	"slices"
	"testing"
)

// Each framework of the table has a name and messages, and every number a
// real message of it states is one the table says it carries.
func TestFrameworkTable(t *testing.T) {
	for _, f := range frameworkTable {
		if f.name == "" || len(f.formats) == 0 {
			t.Errorf("%s: no name or no formats", f.key)
		}
	}
	for _, c := range realCases {
		fw, _ := c.want["framework"].(string)
		f := frameworks[fw]
		if f == nil {
			t.Errorf("%s: framework %q is not in the table", c.file, fw)
			continue
		}
		for k := range c.want {
			if isNumber(k) && !slices.Contains(f.carries, k) && !carriedByAnother(k) {
				t.Errorf("%s: %s states %s, which the table does not say it carries", c.file, fw, k)
			}
		}
	}
}

// carriedByAnother: a number that a message folded into another's fills
// in: the BFC allocator's statistics, printed after whichever allocator's
// warning (XLA's CUDA async allocator's too), and the device of a warning
// before the error.
func carriedByAnother(k string) bool {
	return k == "device" || slices.Contains([]string{"allowed_bytes", "allocated_by_framework_bytes", "peak_allocated_bytes",
		"num_allocs", "max_alloc_size_bytes", "largest_free_block_bytes"}, k)
}
