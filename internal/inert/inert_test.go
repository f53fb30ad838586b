package inert

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	const P = Placeholder
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"python train.py --lr 0.1", "python train.py --lr 0.1"},
		{"naïve 日本語 ✓ \uFFFD", "naïve 日本語 ✓ \uFFFD"},
		{"\x1b]52;c;aGk=\a", P + "]52;c;aGk=" + P},
		{"\x1b]2;pwned\x1b\\", P + "]2;pwned" + P + "\\"},
		{"\x1b[2J\x1b[H", P + "[2J" + P + "[H"},
		{"a\u009b2Jb\u009dc", "a" + P + "2Jb" + P + "c"},
		{"a\x9b2Jb\x9dc", "a" + P + "2Jb" + P + "c"},
		{"tab\there\nnew\rcr", "tab" + P + "here" + P + "new" + P + "cr"},
		{"del\x7f nul\x00", "del" + P + " nul" + P},
		{"\u202egnp.exe\u202c \u2066x\u2069 \u2067\u2068", P + "gnp.exe" + P + " " + P + "x" + P + " " + P + P},
		{"\u202a\u202b\u202d", P + P + P},
		{"\xff\xfe ok \xc3", P + P + " ok " + P},
		{"\xe2\x80", P + P},              // a rune cut short: each byte
		{"\u2029\u200f", "\u2029\u200f"}, // not in the rule
		{"\u00a0é", "\u00a0é"},           // U+00A0 is just past C1
	} {
		got := String(c.in)
		if got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		if b := Bytes([]byte(c.in)); b != c.want {
			t.Errorf("Bytes(%q) = %q, want %q", c.in, b, c.want)
		}
		if a := string(Append([]byte("x"), c.in)); a != "x"+c.want {
			t.Errorf("Append(%q) = %q", c.in, a)
		}
		if Is(c.in) != (c.in == c.want) {
			t.Errorf("Is(%q) = %v", c.in, Is(c.in))
		}
		if !Is(got) || !utf8.ValidString(got) {
			t.Errorf("String(%q) = %q is not inert", c.in, got)
		}
	}
}

// Every byte value and every rune of the ranges, alone and between letters.
func TestEveryControl(t *testing.T) {
	for r := rune(0); r < 0x3000; r++ {
		s := "a" + string(r) + "b"
		got := String(s)
		bad := r < 0x20 || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
		if r >= 0xd800 && r <= 0xdfff {
			continue // not encodable
		}
		if bad && got != "a"+Placeholder+"b" || !bad && got != s {
			t.Errorf("U+%04X: String(%q) = %q", r, s, got)
		}
	}
	for c := 0x80; c < 0x100; c++ {
		if got := String("a" + string([]byte{byte(c)}) + "b"); got != "a"+Placeholder+"b" {
			t.Errorf("byte %#x alone: %q", c, got)
		}
	}
}

func TestCleanStringsDoNotAllocate(t *testing.T) {
	s := strings.Repeat("python3 -m torch.distributed.run --nproc 8 训练.py ", 4)
	if n := testing.AllocsPerRun(100, func() { _ = String(s) }); n != 0 {
		t.Errorf("String of a clean string: %v allocations, want 0", n)
	}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], s) }); n != 0 {
		t.Errorf("Append of a clean string: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = String(s + "\x1b") }); n > 2 {
		t.Errorf("String of a dirty string: %v allocations, want at most 2", n)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "ok", "\x1b]52;c;x\a", "\x9b\xc2\x9b", "\u202e", "\xe2\x80\xae"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if IsBad(r) {
				t.Fatalf("String(%q) = %q holds U+%04X", s, got, r)
			}
		}
		if String(got) != got {
			t.Fatalf("String is not idempotent on %q", s)
		}
		if Is(s) != (got == s) {
			t.Fatalf("Is(%q) = %v, String changed it: %v", s, Is(s), got != s)
		}
	})
}

var sink string

// The peer is the obvious way to write the rule, strings.Map over a
// predicate after strings.ToValidUTF8; the ratio of the two is what the
// benchmark shows.
func peer(s string) string {
	return strings.Map(func(r rune) rune {
		if IsBad(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, Placeholder))
}

func BenchmarkString(b *testing.B) {
	clean := "/usr/bin/python3 -m torch.distributed.run --nproc_per_node 8 train.py --config configs/llama-70b.yaml"
	dirty := clean[:40] + "\x1b]52;c;aGVsbG8=\a" + clean[40:]
	for _, c := range []struct{ name, s string }{{"clean", clean}, {"hostile", dirty}} {
		b.Run(c.name+"/inert", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = String(c.s)
			}
		})
		b.Run(c.name+"/peer", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = peer(c.s)
			}
		})
	}
}
