package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/ui/common"
)

// matchesAny reports whether k is one of bs.
func matchesAny(k tea.KeyPressMsg, bs []key.Binding) bool {
	return key.Matches(k, bs...)
}

// The components of this package that keep the contract.
var (
	_ common.Component = (*procPane)(nil)
)
