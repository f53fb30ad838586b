package common

import "charm.land/bubbles/v2/key"

// KeyMap is every key of the live view, in one place; the help screen is
// built from it.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Tab, Enter, Back                        key.Binding
	Sort, Filter, Mine, Group, Span         key.Binding
	SortPick, Reverse, SortLeft, SortRight  key.Binding
	Pause, Faster, Slower                   key.Binding
	Kill, Signal, Alerts, Help, Quit        key.Binding
	Watch                                   key.Binding // notify when the selected GPU is free (--notify)

	// Replay only.
	StepBack, StepFwd, SeekBack, SeekFwd, SeekStart, SeekEnd, Play, Speed key.Binding

	// Prompts.
	Yes, No key.Binding
	// Choices in the sort picker and the signal list.
	Prev, Next key.Binding
}

func NewKeyMap(replay bool) KeyMap {
	k := KeyMap{
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "move up")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "move down")),
		PageUp:    key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown:  key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Top:       key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "first row")),
		Bottom:    key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "last row")),
		Tab:       key.NewBinding(key.WithKeys("tab", "shift+tab", "left", "right", "h", "l"), key.WithHelp("tab", "GPUs ⇄ processes")),
		Enter:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "detail / open host")),
		Back:      key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
		Sort:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "next sort column")),
		SortPick:  key.NewBinding(key.WithKeys("f6"), key.WithHelp("F6", "choose the sort column")),
		Reverse:   key.NewBinding(key.WithKeys("I"), key.WithHelp("I", "reverse the sort")),
		SortLeft:  key.NewBinding(key.WithKeys("<", ","), key.WithHelp("< >", "sort by the column left / right")),
		SortRight: key.NewBinding(key.WithKeys(">", "."), key.WithHelp("< >", "sort by the column left / right")),
		Filter:    key.NewBinding(key.WithKeys("/", "f3"), key.WithHelp("/ F3", "search user, command, container, PID")),
		Mine:      key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "my processes only")),
		Group:     key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "group by user, then by job")),
		Span:      key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "graph time span")),
		Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause display")),
		Faster:    key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "sample faster (1m … 50ms)")),
		Slower:    key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("-", "sample slower (50ms … 1m)")),
		Kill:      key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "SIGTERM (y/n); K again: SIGKILL")),
		Signal:    key.NewBinding(key.WithKeys("f9"), key.WithHelp("F9", "choose a signal: TERM, INT, HUP, KILL")),
		Watch:     key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "watch GPU (--notify)")),
		Alerts:    key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "all alerts, since when, where")),
		Help:      key.NewBinding(key.WithKeys("?", "f1"), key.WithHelp("? F1", "help")),
		Quit:      key.NewBinding(key.WithKeys("q", "f10", "ctrl+c"), key.WithHelp("q F10", "quit")),
		Yes:       key.NewBinding(key.WithKeys("y", "Y")),
		No:        key.NewBinding(key.WithKeys("n", "N", "esc")),
		Prev:      key.NewBinding(key.WithKeys("left", "up", "h", "k")),
		Next:      key.NewBinding(key.WithKeys("right", "down", "l", "j", "tab")),
	}
	if replay {
		// In a replay the arrows step through time and g/G jump to the ends;
		// tab, h and l still switch panes.
		k.Tab = key.NewBinding(key.WithKeys("tab", "shift+tab", "h", "l"), key.WithHelp("tab", "GPUs ⇄ processes"))
		k.Top = key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "first row"))
		k.Bottom = key.NewBinding(key.WithKeys("end"), key.WithHelp("end", "last row"))
		k.StepBack = key.NewBinding(key.WithKeys("left"), key.WithHelp("←", "step back"))
		k.StepFwd = key.NewBinding(key.WithKeys("right"), key.WithHelp("→", "step forward"))
		k.SeekBack = key.NewBinding(key.WithKeys("["), key.WithHelp("[", "back a minute"))
		k.SeekFwd = key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "forward a minute"))
		k.SeekStart = key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "start of recording"))
		k.SeekEnd = key.NewBinding(key.WithKeys("G"), key.WithHelp("G", "end of recording"))
		k.Play = key.NewBinding(key.WithKeys("space", "p"), key.WithHelp("space/p", "play / pause"))
		k.Speed = key.NewBinding(key.WithKeys(">"), key.WithHelp(">", "speed ×1/×4/×16"))
		// > is the speed here; the sort moves right with . alone.
		k.SortRight = key.NewBinding(key.WithKeys("."), key.WithHelp("< .", "sort by the column left / right"))
		k.SortLeft.SetHelp("< .", "sort by the column left / right")
		k.Pause.SetEnabled(false)
		k.Faster.SetEnabled(false)
		k.Slower.SetEnabled(false)
		// A recording has no live process to signal.
		k.Kill.SetEnabled(false)
		k.Signal.SetEnabled(false)
	} else {
		for _, b := range []*key.Binding{&k.StepBack, &k.StepFwd, &k.SeekBack, &k.SeekFwd, &k.SeekStart, &k.SeekEnd, &k.Play, &k.Speed} {
			b.SetEnabled(false)
		}
	}
	return k
}

// HelpGroups is the key list of the help screen, by theme.
func (k KeyMap) HelpGroups() [][]key.Binding {
	groups := [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Tab, k.Enter, k.Back},
		{k.Sort, k.SortPick, k.Reverse, k.SortLeft, k.Filter, k.Mine, k.Group, k.Span, k.Kill, k.Signal, k.Watch},
		{k.Pause, k.Faster, k.Slower, k.Alerts, k.Help, k.Quit},
	}
	if k.Play.Enabled() {
		groups = append(groups, []key.Binding{k.Play, k.StepBack, k.StepFwd, k.SeekBack, k.SeekFwd, k.SeekStart, k.SeekEnd, k.Speed})
	}
	return groups
}

// KeyRow is a line of the key table: the keys and what they do.
type KeyRow struct{ Keys, Does string }

// KeyTable is the live view's keys, as the help screen lists them (and the
// README's table and the man page's KEYS section, which are made from it);
// replay's own keys come last, marked.
func KeyTable() []KeyRow {
	var rows []KeyRow
	for _, g := range NewKeyMap(false).HelpGroups() {
		for _, b := range g {
			if b.Help().Key != "" {
				rows = append(rows, KeyRow{b.Help().Key, b.Help().Desc})
			}
		}
	}
	r := NewKeyMap(true)
	for _, b := range []key.Binding{r.Play, r.StepBack, r.StepFwd, r.SeekBack, r.SeekFwd, r.SeekStart, r.SeekEnd, r.Speed} {
		rows = append(rows, KeyRow{b.Help().Key, b.Help().Desc + " (replay)"})
	}
	return rows
}
