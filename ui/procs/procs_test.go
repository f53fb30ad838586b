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

// Every sort is a column's, named by its title; every one but memory's
// (the table's own) with its order.
func TestEverySortHasItsColumn(t *testing.T) {
	for mode := SortMode(0); mode < NSortModes; mode++ {
		i := slices.IndexFunc(procColumns, func(c procColumn) bool { return c.sort == mode })
		if i < 0 {
			t.Errorf("sort %d: no column sorts by it", int(mode))
			continue
		}
		if mode.String() != procColumns[i].title {
			t.Errorf("sort by %s is named %q", procColumns[i].title, mode)
		}
		if mode != SortMem && sortOrders[mode] == nil {
			t.Errorf("sort %s: no column says its order", mode)
		}
	}
}
