package procs

import (
	"slices"
	"testing"

	"github.com/vramtop/vramtop/ui/common"
)

func TestCompareIDs(t *testing.T) {
	ordered := []string{"0", "0/1", "0/2", "0/10", "1", "2", "10", "11", "node-a:2", "node-a:10", "node-b:0"}
	for i := range ordered {
		for j := range ordered {
			if got, want := CompareIDs(ordered[i], ordered[j]), cmpInt(i, j); got != want {
				t.Errorf("CompareIDs(%q, %q) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The help screen's legend names the process table's columns: each column
// it explains is one of the table's.
func TestColumnLegendNamesTheTablesColumns(t *testing.T) {
	for _, c := range common.ColumnTable() {
		if !slices.ContainsFunc(procColumns, func(col procColumn) bool { return col.title == c.Name }) {
			t.Errorf("the legend explains %s, which the process table does not have", c.Name)
		}
	}
}

// Every sort but memory's (the table's own) is a column's, with its
// order, and its name.
func TestEverySortHasItsColumn(t *testing.T) {
	for mode := SortMode(0); mode < NSortModes; mode++ {
		if mode.String() == "" {
			t.Errorf("sort %d has no name", mode)
		}
		if mode != SortMem && sortOrders[mode] == nil {
			t.Errorf("sort %s: no column says its order", mode)
		}
		if sortTitle(mode) == mode.String() && mode != SortMem {
			t.Errorf("sort %s: no column sorts by it", mode)
		}
	}
}
