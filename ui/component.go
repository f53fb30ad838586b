package ui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/vramtop/vramtop/ui/common"
)

// killRequest asks to signal the process of a row: SIGTERM (SIGKILL after a
// SIGTERM), or a signal chosen from a list.
type killRequest struct {
	row  procRow
	list bool
}

// matchesAny reports whether k is one of bs.
func matchesAny(k tea.KeyPressMsg, bs []key.Binding) bool {
	return key.Matches(k, bs...)
}

// The components of this package that keep the contract.
var (
	_ common.Component = (*procPane)(nil)
	_ common.Component = (*killPrompt)(nil)
	_ common.Component = (*bannerBar)(nil)
	_ common.Component = (*footerBar)(nil)
)
