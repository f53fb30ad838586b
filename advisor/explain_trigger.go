package advisor

import "sync"

// triggerMatcher finds scanTriggers in text as squeeze would see it (ASCII
// lower case; white space, control characters, * and ` skipped; ANSI
// colour codes skipped) in one pass over the raw bytes: an Aho-Corasick
// automaton over byte classes, whose skipped bytes leave the state as it
// is. One pass replaces one search per trigger per line.
type triggerMatcher struct {
	class [256]uint8 // byte → column of delta
	ncls  int
	// delta[state+class] is the next state, a state being the offset of
	// its row (its number × ncls). States from final on end a trigger
	// (their failure chain included); escState is ESC.
	delta []uint32
	final uint32
	// guard[(state-final)/ncls], when not 0, is a byte (lower case) that
	// must not follow: the state ends only a trigger of triggerGuards.
	guard []byte
}

// triggerGuards are triggers that do not count when the byte given
// (squeezed) follows them: vLLM prints "GPU KV cache usage: 12.3%" every
// few seconds, and no message holds "KV cache usage".
var triggerGuards = map[string]byte{"kvcache": 'u'}

const (
	clsOther = 0 // a byte no trigger holds
	clsSkip  = 1 // a byte squeeze drops
	clsESC   = 2
	clsFirst = 3 // the first byte that triggers hold
	escState = 1<<32 - 1
)

var triggers = sync.OnceValue(func() *triggerMatcher { return newTriggerMatcher(scanTriggers) })

func newTriggerMatcher(words []string) *triggerMatcher {
	m := &triggerMatcher{}
	m.classes(words)
	nodes := m.trie(words)
	m.table(nodes)
	return m
}

// classes gives each byte that a trigger holds a column, upper case that
// of its lower case.
func (m *triggerMatcher) classes(words []string) {
	n := clsFirst
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if c := w[i]; m.class[c] == clsOther {
				m.class[c] = uint8(n)
				n++
			}
		}
	}
	for c := 0; c < 256; c++ {
		switch {
		case c == 0x1b:
			m.class[c] = clsESC
		case c <= ' ' || c == 0x7f || c == '*' || c == '`':
			m.class[c] = clsSkip
		case c >= 'A' && c <= 'Z':
			m.class[c] = m.class[c+'a'-'A']
		}
	}
	m.ncls = n
}

// A trieNode is a state of the automaton while it is built.
type trieNode struct {
	next  []int32 // by class; -1 none
	fail  int32
	end   bool
	guard byte // the node ends only a trigger with this guard
}

// endWith marks nd as the end of a trigger of guard g.
func (nd *trieNode) endWith(g byte) {
	if !nd.end {
		nd.guard = g
	} else if nd.guard != g {
		nd.guard = 0
	}
	nd.end = true
}

// trie returns the trie of the words, with the failure links and every
// transition filled in (breadth first).
func (m *triggerMatcher) trie(words []string) []trieNode {
	newNode := func() trieNode {
		nx := make([]int32, m.ncls)
		for i := range nx {
			nx[i] = -1
		}
		return trieNode{next: nx}
	}
	nodes := []trieNode{newNode()}
	for _, w := range words {
		s := int32(0)
		for i := 0; i < len(w); i++ {
			k := m.class[w[i]]
			if nodes[s].next[k] < 0 {
				nodes[s].next[k] = int32(len(nodes))
				nodes = append(nodes, newNode())
			}
			s = nodes[s].next[k]
		}
		nodes[s].endWith(triggerGuards[w])
	}
	order := []int32{0}
	for q := 0; q < len(order); q++ {
		s := order[q]
		for k := clsFirst; k < m.ncls; k++ {
			t := nodes[s].next[k]
			switch {
			case t < 0 && s == 0:
				nodes[s].next[k] = 0
			case t < 0:
				nodes[s].next[k] = nodes[nodes[s].fail].next[k]
			default:
				if s != 0 {
					nodes[t].fail = nodes[nodes[s].fail].next[k]
				}
				if f := nodes[nodes[t].fail]; f.end {
					nodes[t].endWith(f.guard)
				}
				order = append(order, t)
			}
		}
	}
	return nodes
}

// table numbers the states so that the final ones come last (one
// comparison per byte tells a match, or ESC) and fills delta.
func (m *triggerMatcher) table(nodes []trieNode) {
	n := uint32(m.ncls)
	id := make([]uint32, len(nodes))
	next := uint32(0)
	for _, final := range []bool{false, true} {
		if final {
			m.final = next * n
		}
		for i := range nodes {
			if nodes[i].end == final {
				id[i] = next * n
				next++
			}
		}
	}
	m.delta = make([]uint32, len(nodes)*m.ncls)
	m.guard = make([]byte, len(nodes)-int(m.final/n))
	for i, nd := range nodes {
		row := m.delta[id[i]:]
		row[clsOther] = id[0] // a byte no trigger holds: back to the root
		row[clsSkip] = id[i]
		row[clsESC] = escState
		for k := clsFirst; k < m.ncls; k++ {
			row[k] = id[nd.next[k]]
		}
		if nd.end {
			m.guard[(id[i]-m.final)/n] = nd.guard
		}
	}
}

// A triggerScan is a position in a text and the automaton's state there.
type triggerScan struct {
	m   *triggerMatcher
	st  uint32
	pos int
}

// next returns the end of the next trigger in text from the scan's
// position on (the offset after its last byte), or -1.
func (t *triggerScan) next(text string) int {
	m, st := t.m, t.st
	delta, final := m.delta, m.final
	class := &m.class
	for i := t.pos; i < len(text); i++ {
		ns := delta[st+uint32(class[text[i]])]
		if ns < final {
			st = ns
			continue
		}
		if ns == escState {
			// ESC [ parameters and its final byte are skipped; an ESC
			// alone is dropped.
			if i+1 < len(text) && text[i+1] == '[' {
				i += 2
				for i < len(text) && (text[i] < '@' || text[i] > '~') {
					i++
				}
			}
			continue
		}
		if g := m.guard[(ns-final)/uint32(m.ncls)]; g != 0 && nextSqueezed(text, i+1) == g {
			st = ns
			continue
		}
		t.st, t.pos = ns, i+1
		return i + 1
	}
	t.st, t.pos = st, len(text)
	return -1
}

// nextSqueezed returns the byte at or after i that squeeze keeps, lower
// case, or 0.
func nextSqueezed(text string, i int) byte {
	for ; i < len(text); i++ {
		switch c := text[i]; {
		case c == 0x1b:
			if i+1 < len(text) && text[i+1] == '[' {
				i += 2
				for i < len(text) && (text[i] < '@' || text[i] > '~') {
					i++
				}
			}
		case c <= ' ' || c == 0x7f || c == '*' || c == '`':
		case c >= 'A' && c <= 'Z':
			return c + 'a' - 'A'
		default:
			return c
		}
	}
	return 0
}

// any tells whether the pieces, squeezed and concatenated (each squeezed
// on its own, as squeeze(squeeze(buf, a), b) would), hold a trigger.
func (m *triggerMatcher) any(pieces ...string) bool {
	t := triggerScan{m: m}
	for _, p := range pieces {
		t.pos = 0
		if t.next(p) >= 0 {
			return true
		}
	}
	return false
}
